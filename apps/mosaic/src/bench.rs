//! `mosaic bench`: the paper's Table 2 (one cooling iteration = 10 stabilisations x 10
//! Sinkhorn iterations) on the GPU against the CPU reference, the full 900 x 8192 solve with
//! 200 cooling iterations (and the other sizes), the exact solver at 2048 x 8192, and
//! greedy/anneal/SoftAssign costs relative to the optimum. At the large target sizes
//! ([`COMPARED`]) the cooling iteration is timed with every kernel that can run it: the
//! default, the passes, and the atomic kernel in several shapes.
//! Data is synthetic and seeded; one [`BenchRecord`] per measurement. [`Options`] narrows a
//! run to some sizes and can leave the slow CPU references out (the exact optimum then comes
//! from the GPU's certified exact solver).

use std::time::Instant;

use engine::profile::PassTime;
use engine::Context;
use indicatif::ProgressBar;
use kit::Backend;

use crate::cpu::distance::distance_cpu;
use crate::cpu::softassign::CpuSoftAssign;
use crate::error::Result;
use crate::gpu::softassign::atomic::AtomicShape;
use crate::gpu::softassign::{GpuSoftAssign, Kernel};
use crate::matrix::DistanceMatrix;
use crate::softassign::{discretise, scale_of, SoftAssignParams};
use crate::solve::{self, Method, SolveOptions};
use crate::synth;

/// The paper's Table 2: (rows, columns, GPU seconds on a GTX 280).
const TABLE2: [(usize, usize, f64); 11] = [
    (100, 100, 0.022),
    (100, 500, 0.023),
    (256, 1024, 0.024),
    (400, 1500, 0.035),
    (512, 2048, 0.052),
    (900, 3000, 0.114),
    (1024, 4096, 0.171),
    (1200, 5000, 0.239),
    (1600, 6000, 0.374),
    (1800, 7000, 0.487),
    (2048, 8192, 0.643),
];
/// Sizes timed besides Table 2's: the full solve's 900 x 8192 (the target sizes are
/// 100 x 100, 900 x 8192 and 2048 x 8192).
const EXTRA_SIZES: [(usize, usize); 1] = [(900, 8192)];
/// Sizes whose cooling iteration is timed with every kernel and the atomic kernel's shapes
/// ([`variants`]): the large target sizes.
const COMPARED: [(usize, usize); 2] = [(900, 8192), (2048, 8192)];
/// The compared size of `--quick` (too large for one workgroup's shared memory).
const QUICK_COMPARED: (usize, usize) = (60, 250);
/// Peak bandwidth used for the floor (H100 compute-shader copy, PLATFORM.md).
const BANDWIDTH_GB_S: f64 = 2600.0;
/// CPU reference work per measurement is capped at about this many matrix entries x
/// Sinkhorn iterations; larger runs are extrapolated linearly in the iteration count.
const CPU_ENTRY_ITERATIONS: f64 = 1.0e9;

/// A photomosaic-like m x n matrix (seeded).
pub fn matrix(m: usize, n: usize, seed: u64) -> DistanceMatrix {
    let (patches, tiles) = synth::problem(synth::grid_for(m), n, (4, 4), seed);
    DistanceMatrix::new(m, n, distance_cpu(&patches, &tiles)).expect("synthetic distances are valid")
}

fn total_ms(passes: &[PassTime]) -> f64 {
    passes.iter().map(|p| p.ms).sum()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// GPU times of one cooling iteration.
struct CoolingTimes {
    /// Timestamps at its start and end, median of the repetitions.
    gpu_ms: f64,
    wall_ms: f64,
    /// From one more run with a timestamp after every dispatch (see [`BenchRecord`]).
    rows_ms: f64,
    columns_ms: f64,
}

/// What `mosaic bench` runs.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Tiny sizes only.
    pub quick: bool,
    /// Only these sizes (m, n), where given: cooling iterations at each with every kernel
    /// and shape, and the full solve with the default and the atomic kernel.
    pub sizes: Vec<(usize, usize)>,
    /// No CPU reference: no CPU SoftAssign timing, no greedy or annealing, and the optimum
    /// from the GPU's exact solver (certified) instead of the CPU's.
    pub skip_cpu: bool,
}

/// The kernels one size is timed with: the one `GpuSoftAssign::new` picks and, at the
/// compared sizes, the passes and the atomic kernel in its planned shape with 1 and 2 rows
/// per step and 128 and 132 row blocks (132: an H200's multiprocessors), without scaled
/// iterations and (1 row per step) with them, where the device runs them.
fn variants(ctx: &Context, d: &DistanceMatrix, params: &SoftAssignParams, compare: bool) -> Result<Vec<GpuSoftAssign>> {
    let default = GpuSoftAssign::new(ctx, d, params, 1)?;
    if !compare {
        return Ok(vec![default]);
    }
    let mut out = Vec::new();
    if default.kernel() != Kernel::Passes {
        out.push(GpuSoftAssign::with_kernel(ctx, d, params, 1, Kernel::Passes)?);
    }
    if ctx.info().shader_buffer_float32_atomic_add {
        let blocks = |b: u32| b.min(d.rows as u32);
        let planned = AtomicShape::planned(ctx.info(), d.rows, d.cols);
        let shapes =
            [(1, 128, false), (2, 128, false), (1, 132, false), (2, 132, false), (1, 128, true), (1, 132, true)].map(
                |(rows_per_step, b, scaled)| AtomicShape {
                    rows_per_step,
                    blocks: blocks(b),
                    scaled: scaled && planned.vec4,
                    ..planned
                },
            );
        let mut seen = Vec::from_iter(default.atomic_shape());
        for shape in std::iter::once(planned).chain(shapes) {
            if seen.contains(&shape) {
                continue;
            }
            seen.push(shape);
            // A shape this device cannot run is left out.
            if let Ok(state) = GpuSoftAssign::with_atomic_shape(ctx, d, params, 1, shape) {
                out.push(state);
            }
        }
    }
    out.insert(0, default);
    Ok(out)
}

/// GPU ms of one cooling iteration (median of `reps`, after a warm-up; timestamps only at
/// its start and end), and its split into row and column passes from one more run with a
/// timestamp after every pass.
fn gpu_cooling_ms(
    ctx: &Context,
    state: &GpuSoftAssign,
    params: &SoftAssignParams,
    reps: usize,
) -> Result<CoolingTimes> {
    let t = params.temperature(0, state.scale());
    let mut totals = Vec::new();
    let mut walls = Vec::new();
    // Full clocks for the timed iterations: each size is timed right after seconds of CPU
    // reference work, and GPUs clock down within seconds of idling.
    engine::ceilings::warm_up(ctx, engine::ceilings::WARM_UP)?;
    for rep in 0..=reps {
        state.reset()?;
        let mut rec = ctx.recorder()?;
        rec.enable_profiling(1)?;
        state.record_cooling_iteration(&mut rec, t, params, false)?;
        rec.mark("cooling iteration");
        let start = Instant::now();
        let passes = rec.submit()?.wait_profiled()?;
        let wall = start.elapsed().as_secs_f64() * 1e3;
        if rep > 0 {
            totals.push(total_ms(&passes));
            walls.push(wall);
        }
    }
    state.reset()?;
    let mut rec = ctx.recorder()?;
    rec.enable_profiling(state.dispatches_per_cooling_iteration(params))?;
    state.record_cooling_iteration(&mut rec, t, params, true)?;
    let passes = rec.submit()?.wait_profiled()?;
    let sum = |name: &str| passes.iter().filter(|p| p.name == name).map(|p| p.ms).sum::<f64>();
    Ok(CoolingTimes {
        gpu_ms: median(totals),
        wall_ms: median(walls),
        rows_ms: sum("rows") + sum("sinkhorn"),
        columns_ms: sum("columns") + sum("finish"),
    })
}

/// CPU ms of one cooling iteration, measured on at most the capped number of Sinkhorn
/// iterations and scaled; returns (ms, iterations measured).
fn cpu_cooling_ms(d: &DistanceMatrix, params: &SoftAssignParams) -> (f64, u32) {
    let per = params.per_temperature();
    let cap = (CPU_ENTRY_ITERATIONS / (d.rows * d.cols) as f64).floor().max(1.0) as u32;
    let iterations = per.min(cap);
    let mut state = CpuSoftAssign::new(d, params, 1);
    let t = params.temperature(0, scale_of(d));
    let start = Instant::now();
    for _ in 0..iterations {
        state.sinkhorn(t);
    }
    (start.elapsed().as_secs_f64() * 1e3 * per as f64 / iterations as f64, iterations)
}

/// Bytes one cooling iteration must move at least: D once per Sinkhorn iteration or, with
/// scaled iterations, D and K's f16 entries once in the first and K once in each other.
fn floor_ms(m: usize, n: usize, params: &SoftAssignParams, scaled: bool) -> f64 {
    let iterations = params.per_temperature() as f64;
    let entry_bytes = if scaled { 6.0 + 2.0 * (iterations - 1.0) } else { 4.0 * iterations };
    (m * n) as f64 * entry_bytes / (BANDWIDTH_GB_S * 1e9) * 1e3
}

/// One measurement of `mosaic bench` (the envelope names the device).
#[derive(Clone, Debug, serde::Serialize)]
#[serde(tag = "bench", rename_all = "snake_case")]
pub enum BenchRecord {
    /// Table 2: one cooling iteration (stabilisations x Sinkhorn iterations) at one size.
    SoftassignCoolingIteration {
        size: String,
        /// The kernel that ran (`GpuSoftAssign::new` picks one workgroup where D fits its
        /// shared memory, else atomic where the device has float atomics, else passes).
        kernel: Kernel,
        /// The atomic kernel's shape (workgroup, rows per step, vec4 loads, row blocks).
        atomic_shape: Option<AtomicShape>,
        /// Dependent dispatches per cooling iteration.
        dispatches: u32,
        /// GPU timestamps, median of the repetitions.
        gpu_ms: f64,
        gpu_wall_ms: f64,
        /// From a separate run with a timestamp after every dispatch: the passes kernel's
        /// row and column passes; the atomic kernel's Sinkhorn dispatches and its finishing
        /// dispatch; 0 for the one-workgroup kernel.
        rows_pass_ms: f64,
        columns_pass_ms: f64,
        /// f64 rayon reference; scaled linearly to the full iteration when fewer Sinkhorn
        /// iterations were measured. None with `--skip-cpu`.
        cpu_ms: Option<f64>,
        cpu_threads: usize,
        cpu_sinkhorn_iterations_measured: u32,
        /// The paper's GTX 280 time, where Table 2 has this size.
        paper_ms: Option<f64>,
        /// Bytes (D read once per Sinkhorn iteration) / 2600 GB/s.
        floor_ms: f64,
        sinkhorn_iterations: u32,
        speedup_vs_paper: Option<f64>,
        speedup_vs_cpu: Option<f64>,
    },
    /// A full solve by every method, costs relative to the optimum.
    FullSolve {
        size: String,
        /// The SoftAssign kernel (the default, and at the compared sizes the atomic kernel).
        softassign_kernel: Kernel,
        cooling_iterations: u32,
        /// The paper: 900x8192 with 200 cooling iterations took under a minute on a GTX 280.
        paper_ms: Option<f64>,
        softassign_gpu_ms: f64,
        softassign_gpu_anneal_ms: f64,
        softassign_cost: f64,
        softassign_ratio: f64,
        exact_cost: f64,
        exact_ms: f64,
        /// Where the optimum was found: the CPU, or the GPU with `--skip-cpu`.
        exact_backend: Backend,
        /// The CPU baselines, None with `--skip-cpu`.
        greedy: Option<Baseline>,
        anneal: Option<Baseline>,
    },
    /// The exact solver alone at the largest size (CPU, one thread, f64).
    Exact { size: String, cpu_ms: f64, cost: f64 },
}

/// A CPU baseline method's cost against the optimum.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Baseline {
    pub cost: f64,
    pub ratio: f64,
    pub ms: f64,
}

impl Baseline {
    fn run(method: Method, d: &DistanceMatrix, options: &SolveOptions, optimum: f64) -> Result<Baseline> {
        let solved = solve::run(method, d, options, None)?;
        Ok(Baseline { cost: solved.cost, ratio: solved.cost / optimum, ms: solved.solve_ms })
    }
}

/// ", {name} {ratio:.4} x" for a baseline that ran.
fn baseline_text(name: &str, baseline: &Option<Baseline>) -> String {
    baseline.as_ref().map_or(String::new(), |b| format!("; {name} {:.4} x", b.ratio))
}

impl std::fmt::Display for BenchRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BenchRecord::SoftassignCoolingIteration {
                size,
                kernel,
                atomic_shape,
                dispatches,
                gpu_ms,
                cpu_ms,
                floor_ms,
                ..
            } => {
                let shape = atomic_shape.map_or(String::new(), |s| {
                    format!(" wg {} rows {} vec4 {} blocks {} scaled {}", s.workgroup, s.rows_per_step, s.vec4, s.blocks, s.scaled)
                });
                let cpu = cpu_ms.map_or(String::new(), |c| format!(", CPU {c:.1} ms, {:.1} x", c / gpu_ms));
                write!(
                    f,
                    "softassign cooling iteration {size}: GPU {gpu_ms:.3} ms ({kernel:?}{shape}, {dispatches} dispatches; floor {floor_ms:.3} ms){cpu}"
                )
            }
            BenchRecord::FullSolve {
                size,
                softassign_kernel,
                softassign_gpu_ms,
                softassign_ratio,
                exact_ms,
                exact_backend,
                greedy,
                anneal,
                ..
            } => write!(
                f,
                "full solve {size}: softassign (GPU, {softassign_kernel:?}) {softassign_gpu_ms:.1} ms at {softassign_ratio:.6} x exact; exact ({exact_backend:?}) {exact_ms:.1} ms{}{}",
                baseline_text("greedy", greedy),
                baseline_text("anneal", anneal)
            ),
            BenchRecord::Exact { size, cpu_ms, cost } => write!(f, "exact {size}: {cpu_ms:.1} ms (cost {cost:.1})"),
        }
    }
}

/// Runs the benchmark set; `emit` gets one record per measurement.
pub fn run(ctx: &Context, options: &Options, mut emit: impl FnMut(&BenchRecord)) -> Result<()> {
    let params = SoftAssignParams::default();
    let paper_ms = |m: usize, n: usize| TABLE2.iter().find(|t| (t.0, t.1) == (m, n)).map(|t| t.2 * 1e3);
    let sizes: Vec<(usize, usize)> = if !options.sizes.is_empty() {
        options.sizes.clone()
    } else if options.quick {
        vec![(20, 30), (37, 101), QUICK_COMPARED]
    } else {
        TABLE2.iter().map(|&(m, n, _)| (m, n)).chain(EXTRA_SIZES).collect()
    };
    // Sizes asked for by name are looked at in detail.
    let compared = |m: usize, n: usize| {
        !options.sizes.is_empty() || COMPARED.contains(&(m, n)) || (options.quick && (m, n) == QUICK_COMPARED)
    };
    let reps = if options.quick { 1 } else { 5 };

    // Table 2: one cooling iteration.
    for &(m, n) in &sizes {
        let d = matrix(m, n, 1);
        let cpu = (!options.skip_cpu).then(|| cpu_cooling_ms(&d, &params));
        for state in variants(ctx, &d, &params, compared(m, n))? {
            let times = gpu_cooling_ms(ctx, &state, &params, reps)?;
            let gpu_ms = times.gpu_ms;
            emit(&BenchRecord::SoftassignCoolingIteration {
                size: format!("{m}x{n}"),
                kernel: state.kernel(),
                atomic_shape: state.atomic_shape(),
                dispatches: state.dispatches_per_cooling_iteration(&params),
                gpu_ms,
                gpu_wall_ms: times.wall_ms,
                rows_pass_ms: times.rows_ms,
                columns_pass_ms: times.columns_ms,
                cpu_ms: cpu.map(|c| c.0),
                cpu_threads: rayon::current_num_threads(),
                cpu_sinkhorn_iterations_measured: cpu.map_or(0, |c| c.1),
                paper_ms: paper_ms(m, n),
                floor_ms: floor_ms(m, n, &params, state.atomic_shape().is_some_and(|s| s.scaled)),
                sinkhorn_iterations: params.per_temperature(),
                speedup_vs_paper: paper_ms(m, n).map(|p| p / gpu_ms),
                speedup_vs_cpu: cpu.map(|c| c.0 / gpu_ms),
            });
        }
    }

    // Full solves, all methods against the optimum; the largest also reports exact alone.
    let full: Vec<(usize, usize)> = if !options.sizes.is_empty() {
        options.sizes.clone()
    } else if options.quick {
        vec![(37, 101)]
    } else {
        vec![(100, 100), (100, 500), (400, 1500), (900, 8192), (2048, 8192)]
    };
    for &(m, n) in &full {
        let d = matrix(m, n, 2);
        let exact_backend = if options.skip_cpu { Backend::Gpu } else { Backend::Cpu };
        let solve_options = SolveOptions { softassign: params.clone(), backend: exact_backend, ..Default::default() };
        let exact = solve::run(Method::Exact, &d, &solve_options, Some(ctx))?;
        let baseline = |method| {
            let cpu = SolveOptions { backend: Backend::Cpu, ..solve_options.clone() };
            (!options.skip_cpu).then(|| Baseline::run(method, &d, &cpu, exact.cost)).transpose()
        };
        let (greedy, anneal) = (baseline(Method::Greedy)?, baseline(Method::Anneal)?);
        // The default kernel and, at the compared sizes, the atomic kernel where it is not
        // the default.
        let mut states = vec![GpuSoftAssign::new(ctx, &d, &params, 1)?];
        if compared(m, n) && ctx.info().shader_buffer_float32_atomic_add && states[0].kernel() != Kernel::Atomic {
            states.push(GpuSoftAssign::with_kernel(ctx, &d, &params, 1, Kernel::Atomic)?);
        }
        for state in states {
            // SoftAssign on the GPU, timing the annealing on its own too.
            let start = Instant::now();
            state.anneal(&params, &ProgressBar::hidden())?;
            let anneal_ms = start.elapsed().as_secs_f64() * 1e3;
            let assignment = discretise(&d, &state.potentials()?, 1);
            let total_ms = start.elapsed().as_secs_f64() * 1e3;
            d.check_assignment(&assignment)?;
            let soft_cost = d.cost(&assignment);
            emit(&BenchRecord::FullSolve {
                size: format!("{m}x{n}"),
                softassign_kernel: state.kernel(),
                cooling_iterations: params.iterations,
                paper_ms: ((m, n) == (900, 8192)).then_some(60000.0),
                softassign_gpu_ms: total_ms,
                softassign_gpu_anneal_ms: anneal_ms,
                softassign_cost: soft_cost,
                softassign_ratio: soft_cost / exact.cost,
                exact_cost: exact.cost,
                exact_ms: exact.solve_ms,
                exact_backend,
                greedy: greedy.clone(),
                anneal: anneal.clone(),
            });
        }
        if Some(&(m, n)) == full.last() && !options.skip_cpu {
            emit(&BenchRecord::Exact { size: format!("{m}x{n}"), cpu_ms: exact.solve_ms, cost: exact.cost });
        }
    }
    Ok(())
}
