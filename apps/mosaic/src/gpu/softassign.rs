//! The SoftAssign stage on the GPU ([`crate::cpu::softassign`] is its f64 twin), f32 throughout, with Section 5.1's clamp of the exponent to
//! [-70, 70], recorded for a whole temperature schedule by one of three kernels:
//!
//! - [`Kernel::Passes`], any size: per Sinkhorn iteration, the fused row pass
//!   (`sinkhorn_rows.comp`) and the column pass with the outlier row (`sinkhorn_cols.comp`).
//!   A cooling iteration of S = stabilisations x Sinkhorn iterations (100 by default) is 2 S
//!   dependent dispatches (200). Bytes per Sinkhorn iteration, B row blocks (128 at most):
//!   rows read D (4 m n) and g once per block (4 B n, L2), write f (4 m) and the column
//!   partials (4 B n); columns read the partials (4 B n) and read/write g (8 n). At
//!   2048 x 8192: 64 MiB of D + 12 MiB of partials and g = 76 MiB, the floor being D's
//!   64 MiB. The column pass is a dispatch of its own because every row block needs every
//!   column's new potential before its first row, and Vulkan has no grid-wide barrier (it
//!   does not promise that workgroups of one dispatch run together). The fallback where the
//!   device has no float atomics, and the reference the atomic kernel is checked against.
//! - [`Kernel::Atomic`], any size, where the device adds floats atomically in storage
//!   buffers (VK_EXT_shader_atomic_float; NVIDIA, AMD, Mesa): one dispatch per Sinkhorn
//!   iteration ([`atomic`]). Row blocks add their column sums atomically; the next
//!   dispatch's workgroups each derive g from the finished sums. S + 1 dispatches per
//!   cooling iteration (101); at 2048 x 8192 a Sinkhorn iteration moves D's 64 MiB plus
//!   32 KiB (g, zeroing) from DRAM, and its 128 x 8192 atomics and per-workgroup g reads
//!   (8 MiB) stay in L2. Where D has 2^20 entries or more and n % 4 == 0, the first
//!   dispatch of a cooling iteration also stores its row-normalised M in f16 as K, and the
//!   other S - 1 run on K in scaling form (`sinkhorn_scaled.comp`): a multiply-add per entry
//!   for the row sum and one for the column sum instead of the exponent's arithmetic and an
//!   exp, and 2 bytes per entry instead of 4 (32 MiB at 2048 x 8192, which the L2 cache of
//!   an H200 nearly holds). M then differs from the log form by up to [`SCALED_BOUND`].
//!
//! Measured on an H200 (`mosaic bench`, one cooling iteration, 132 row blocks): 2048 x 8192
//! atomic with scaled iterations 1.81 ms (1.85 with 128 blocks), without them 2.26 ms (its
//! dispatches alternate their row order to start where L2 is warm), passes 2.96
//! ms; 900 x 8192 1.28 / 1.55 / 1.86 ms. Full solves (200 cooling iterations): 0.40 s at
//! 2048 x 8192 and 0.29 s at 900 x 8192, at 1.00075x and 1.00091x the exact cost, as without
//! scaled iterations. A Sinkhorn dispatch costs about 6-8 us that does not depend on the
//! size (launch after the barrier, the first rows' latency, the column update, the atomics
//! draining), plus its block's rows. D itself in f16 was tried and dropped: rounding D
//! moves M by the rounding times 1/t, which grows as the temperature falls, and the full
//! solve got worse (BENCHMARKS.md); K's entries are at most 1 and their rounding is
//! relative, whatever t.
//! - [`Kernel::Workgroup`], when D, f and g fit in one workgroup's shared memory (100 x 100
//!   does within NVIDIA's 48 KiB): one dispatch per cooling iteration
//!   (`sinkhorn_workgroup.comp`) runs all S Sinkhorn iterations with workgroup barriers.
//!   It reads D, f, g once and writes f, g once per cooling iteration; a 100 x 100 cooling
//!   iteration goes from 200 dispatches (about 6 us of launch gap each on an H200, 1.2 ms)
//!   to 1.

pub mod atomic;

use std::collections::VecDeque;

use engine::{Buffer, Context, Kernel as Compiled, Location, Recorder};
use indicatif::ProgressBar;

use crate::error::{MosaicError, Result};
use crate::matrix::DistanceMatrix;
use crate::shaders::kernels;
use crate::softassign::{capacity, discretise, scale_of, Potentials, SoftAssignParams, CLAMP_F32};
use atomic::{AtomicKernel, AtomicShape, Temperature};

/// Row blocks the row pass aims for: about one workgroup per multiprocessor of a large GPU
/// (measured on an H100, 132 SMs: 128 blocks beat 256 and more, whose extra column partial
/// sums cost more in the column pass than the longer row streams per block cost here).
const TARGET_BLOCKS: usize = 128;
/// Columns each invocation of the row pass aims to own (registers per invocation grow
/// with it; more are used only when the workgroup is at the device's maximum).
const COLUMNS_PER_INVOCATION: u32 = 8;
/// Workgroup size of the column pass (at most; capped by the device).
const COLUMN_WORKGROUP: u32 = 1024;
/// Columns per workgroup of the column pass; the workgroup's invocations split the blocks
/// between COLUMN_WORKGROUP / COLUMNS_PER_GROUP slices, so each adds only a few partials.
const COLUMNS_PER_GROUP: u32 = 32;
/// Cooling iterations per submitted command buffer.
const COOLING_PER_SUBMIT: u32 = 25;
/// Command buffers kept queued: recording the next overlaps GPU work, and the progress bar
/// moves as each one finishes instead of jumping at the end.
const IN_FLIGHT: usize = 2;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct RowPush {
    m: u32,
    n: u32,
    rows_per_block: u32,
    t: f32,
    alpha: f32,
    clamp: f32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ColPush {
    n: u32,
    blocks: u32,
    t: f32,
    clamp: f32,
    log_capacity: f32,
}

/// Which kernels run the Sinkhorn iterations (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kernel {
    /// A row pass and a column pass per Sinkhorn iteration: any size.
    Passes,
    /// One workgroup runs a whole cooling iteration with D in shared memory.
    Workgroup,
    /// One dispatch per Sinkhorn iteration, column sums in float atomics: any size.
    Atomic,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct WorkgroupPush {
    iterations: u32,
    t: f32,
    alpha: f32,
    clamp: f32,
    log_capacity: f32,
}

/// Workgroup size of the one-workgroup kernel: about 8 entries of D per invocation, at least
/// two full subgroups, at most 1024 invocations.
fn workgroup_kernel_size(ctx: &Context, m: usize, n: usize) -> u32 {
    let info = ctx.info();
    let max = info.max_workgroup_invocations.min(1024);
    let least = (2 * info.subgroup_size.max(1)).min(max);
    ((m * n).div_ceil(8).min(max as usize) as u32).next_power_of_two().clamp(least, max)
}

/// Whether the one-workgroup kernel fits this shape: shared memory holds D (m n), f twice
/// and the inverse row sums (3 m), g (n) and one slice sum per invocation.
pub fn workgroup_kernel_fits(ctx: &Context, m: usize, n: usize) -> bool {
    let words = m
        .checked_mul(n)
        .and_then(|mn| mn.checked_add(3 * m + n))
        .map(|w| w + workgroup_kernel_size(ctx, m, n) as usize);
    words.and_then(|w| w.checked_mul(4)).is_some_and(|bytes| bytes <= ctx.info().max_shared_memory_bytes as usize)
}

/// SoftAssign state on the GPU for one distance matrix.
pub struct GpuSoftAssign {
    ctx: Context,
    rows_pipe: Compiled<RowPush>,
    cols_pipe: Compiled<ColPush>,
    /// The one-workgroup kernel, where it is the one used.
    workgroup_pipe: Option<Compiled<WorkgroupPush>>,
    /// The atomic kernel, where it is the one used.
    atomic: Option<AtomicKernel>,
    m: usize,
    n: usize,
    rows_per_block: usize,
    blocks: usize,
    scale: f64,
    alpha: f32,
    /// ln of the uses each tile may have (the column marginal).
    log_capacity: f32,
    d: Buffer<f32>,
    f: Buffer<f32>,
    /// n potentials, then (atomic kernel) a second slot of n its dispatches pass on.
    g: Buffer<f32>,
    partials: Buffer<f32>,
}

impl GpuSoftAssign {
    /// Uploads D, allocates the potentials (zero) and creates the pipelines for this shape;
    /// each tile may be used `repeat` times. The one-workgroup kernel runs where it fits,
    /// else the atomic kernel where the device has float atomics, else the passes.
    pub fn new(ctx: &Context, d: &DistanceMatrix, params: &SoftAssignParams, repeat: usize) -> Result<GpuSoftAssign> {
        let kernel = if workgroup_kernel_fits(ctx, d.rows, d.cols) {
            Kernel::Workgroup
        } else if ctx.info().shader_buffer_float32_atomic_add {
            Kernel::Atomic
        } else {
            Kernel::Passes
        };
        GpuSoftAssign::with_kernel(ctx, d, params, repeat, kernel)
    }

    /// As [`GpuSoftAssign::new`] with the kernel chosen (tests run all on one shape);
    /// `Kernel::Workgroup` must fit ([`workgroup_kernel_fits`]), `Kernel::Atomic` runs in
    /// its planned shape ([`AtomicShape::planned`]).
    pub fn with_kernel(
        ctx: &Context,
        d: &DistanceMatrix,
        params: &SoftAssignParams,
        repeat: usize,
        kernel: Kernel,
    ) -> Result<GpuSoftAssign> {
        let shape = (kernel == Kernel::Atomic).then(|| AtomicShape::planned(ctx.info(), d.rows, d.cols));
        GpuSoftAssign::build(ctx, d, params, repeat, kernel, shape)
    }

    /// The atomic kernel in a given shape (the benchmark and the sweep compare shapes).
    pub fn with_atomic_shape(
        ctx: &Context,
        d: &DistanceMatrix,
        params: &SoftAssignParams,
        repeat: usize,
        shape: AtomicShape,
    ) -> Result<GpuSoftAssign> {
        GpuSoftAssign::build(ctx, d, params, repeat, Kernel::Atomic, Some(shape))
    }

    fn build(
        ctx: &Context,
        d: &DistanceMatrix,
        params: &SoftAssignParams,
        repeat: usize,
        kernel: Kernel,
        atomic_shape: Option<AtomicShape>,
    ) -> Result<GpuSoftAssign> {
        let (m, n) = (d.rows, d.cols);
        let info = ctx.info();
        ctx.check_binding((m * n * 4) as u64, &format!("a {m} x {n} distance matrix"))?;
        // The row pass keeps per-subgroup sums for at most 128 subgroups.
        let max_wg = info.max_workgroup_invocations.min(1024).min(128 * info.subgroup_size.max(1));
        // Up to COLUMNS_PER_INVOCATION columns per invocation: fewer, busier invocations
        // per workgroup barrier.
        let workgroup = (n as u32).div_ceil(COLUMNS_PER_INVOCATION).next_power_of_two().clamp(64.min(max_wg), max_wg);
        let per_thread = (n as u32).div_ceil(workgroup);
        let rows_per_block = m.div_ceil(TARGET_BLOCKS);
        // The column pass's workgroup: a whole number of COLUMNS_PER_GROUP-wide slices.
        let column_workgroup =
            COLUMN_WORKGROUP.min(info.max_workgroup_invocations) / COLUMNS_PER_GROUP * COLUMNS_PER_GROUP;
        let blocks = m.div_ceil(rows_per_block);
        let rows_pipe = ctx.kernel(&kernels::SINKHORN_ROWS, &[workgroup, per_thread])?;
        let cols_pipe = ctx.kernel(&kernels::SINKHORN_COLS, &[column_workgroup, COLUMNS_PER_GROUP])?;
        let workgroup_pipe = match kernel {
            Kernel::Passes | Kernel::Atomic => None,
            Kernel::Workgroup if workgroup_kernel_fits(ctx, m, n) => {
                Some(ctx.kernel(&kernels::SINKHORN_WORKGROUP, &[workgroup_kernel_size(ctx, m, n), m as u32, n as u32])?)
            }
            Kernel::Workgroup => {
                return Err(MosaicError::InvalidInput(format!(
                    "a {m} x {n} matrix does not fit one workgroup's shared memory"
                )))
            }
        };
        let atomic = atomic_shape.map(|shape| AtomicKernel::new(ctx, m, n, shape)).transpose()?;
        let g_slots = if atomic.is_some() { 2 } else { 1 };
        let scale = scale_of(d);
        let state = GpuSoftAssign {
            ctx: ctx.clone(),
            rows_pipe,
            cols_pipe,
            workgroup_pipe,
            atomic,
            m,
            n,
            rows_per_block,
            blocks,
            scale,
            alpha: (params.alpha * scale) as f32,
            log_capacity: capacity(d, repeat).ln() as f32,
            d: ctx.upload(&d.to_f32(), "distance matrix")?,
            f: ctx.buffer(m, Location::Device, "row potentials")?,
            g: ctx.buffer(g_slots * n, Location::Device, "column potentials")?,
            partials: ctx.buffer(blocks * n, Location::Device, "column partial sums")?,
        };
        state.reset()?;
        Ok(state)
    }

    /// Sets f = g = 0 (the start of a solve).
    pub fn reset(&self) -> Result<()> {
        let mut rec = self.ctx.recorder()?;
        rec.fill(&self.f, 0);
        rec.fill(&self.g, 0);
        if let Some(atomic) = &self.atomic {
            atomic.reset(&mut rec);
        }
        rec.submit()?.wait()?;
        Ok(())
    }

    /// The mean distance temperatures are relative to.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Records one Sinkhorn iteration of the passes kernel at temperature `t`, whichever
    /// kernel cooling iterations use: row pass, column pass; with `mark_passes`, each pass
    /// ends in a profiling mark ("rows", "columns").
    pub fn record_sinkhorn(&self, rec: &mut Recorder, t: f64, mark_passes: bool) -> Result<()> {
        let push = RowPush {
            m: self.m as u32,
            n: self.n as u32,
            rows_per_block: self.rows_per_block as u32,
            t: t as f32,
            alpha: self.alpha,
            clamp: CLAMP_F32,
        };
        rec.pass(&self.rows_pipe)
            .read(&self.d)
            .read_write(&self.f)
            .read(&self.g)
            .write(&self.partials)
            .push(&push)
            .dispatch_linear(self.blocks as u32)?;
        if mark_passes {
            rec.mark("rows");
        }
        let push = ColPush {
            n: self.n as u32,
            blocks: self.blocks as u32,
            t: t as f32,
            clamp: CLAMP_F32,
            log_capacity: self.log_capacity,
        };
        rec.pass(&self.cols_pipe)
            .read(&self.partials)
            .read_write(&self.g)
            .push(&push)
            .dispatch_linear((self.n as u32).div_ceil(COLUMNS_PER_GROUP))?;
        if mark_passes {
            rec.mark("columns");
        }
        Ok(())
    }

    /// The kernel that runs the Sinkhorn iterations.
    pub fn kernel(&self) -> Kernel {
        if self.workgroup_pipe.is_some() {
            Kernel::Workgroup
        } else if self.atomic.is_some() {
            Kernel::Atomic
        } else {
            Kernel::Passes
        }
    }

    /// The atomic kernel's shape, where it is the one used.
    pub fn atomic_shape(&self) -> Option<AtomicShape> {
        self.atomic.as_ref().map(AtomicKernel::shape)
    }

    /// Dependent dispatches one cooling iteration records.
    pub fn dispatches_per_cooling_iteration(&self, params: &SoftAssignParams) -> u32 {
        match self.kernel() {
            Kernel::Workgroup => 1,
            Kernel::Atomic => params.per_temperature() + 1,
            Kernel::Passes => 2 * params.per_temperature(),
        }
    }

    /// Records one cooling iteration (stabilisations x Sinkhorn iterations) at `t`; with
    /// `mark_passes`, the passes kernel marks every pass ("rows", "columns"), the atomic
    /// kernel every dispatch ("sinkhorn", then "finish") and the one-workgroup kernel its
    /// one dispatch ("workgroup").
    pub fn record_cooling_iteration(
        &self,
        rec: &mut Recorder,
        t: f64,
        params: &SoftAssignParams,
        mark_passes: bool,
    ) -> Result<()> {
        if let Some(atomic) = &self.atomic {
            let temp =
                Temperature { t: t as f32, alpha: self.alpha, clamp: CLAMP_F32, log_capacity: self.log_capacity };
            return atomic.record_cooling_iteration(
                rec,
                (&self.d, &self.f, &self.g),
                (self.m, self.n),
                params.per_temperature(),
                &temp,
                mark_passes,
            );
        }
        let Some(pipe) = &self.workgroup_pipe else {
            for _ in 0..params.per_temperature() {
                self.record_sinkhorn(rec, t, mark_passes)?;
            }
            return Ok(());
        };
        let push = WorkgroupPush {
            iterations: params.per_temperature(),
            t: t as f32,
            alpha: self.alpha,
            clamp: CLAMP_F32,
            log_capacity: self.log_capacity,
        };
        rec.pass(pipe).read(&self.d).read_write(&self.f).read_write(&self.g).push(&push).dispatch_linear(1)?;
        if mark_passes {
            rec.mark("workgroup");
        }
        Ok(())
    }

    /// Runs the whole temperature schedule from the current state; `progress` advances by
    /// the cooling iterations of each command buffer as it finishes. Command buffers are
    /// submitted as soon as they are recorded, so recording overlaps GPU work; each waits
    /// (on the GPU) for the one before, whose potentials it continues from.
    pub fn anneal(&self, params: &SoftAssignParams, progress: &ProgressBar) -> Result<()> {
        let mut in_flight: VecDeque<(engine::Submission, u32)> = VecDeque::new();
        let mut k = 0;
        while k < params.iterations {
            let mut rec = self.ctx.recorder()?;
            if let Some((previous, _)) = in_flight.back() {
                rec.wait_for(previous);
            }
            let end = (k + COOLING_PER_SUBMIT).min(params.iterations);
            for level in k..end {
                self.record_cooling_iteration(&mut rec, params.temperature(level, self.scale), params, false)?;
            }
            in_flight.push_back((rec.submit()?, end - k));
            k = end;
            while in_flight.len() > IN_FLIGHT {
                let (submission, levels) = in_flight.pop_front().expect("more than IN_FLIGHT queued");
                submission.wait()?;
                progress.inc(levels as u64);
            }
        }
        for (submission, levels) in in_flight {
            submission.wait()?;
            progress.inc(levels as u64);
        }
        Ok(())
    }

    /// Downloads the potentials.
    pub fn potentials(&self) -> Result<Potentials> {
        let widen = |v: Vec<f32>| v.into_iter().map(f64::from).collect();
        let mut g = self.ctx.download(&self.g)?;
        g.truncate(self.n);
        Ok(Potentials { f: widen(self.ctx.download(&self.f)?), g: widen(g) })
    }

    /// M[i][j] for the current potentials at temperature `t`, computed on the host from the
    /// downloaded potentials exactly as the kernels do (for tests).
    pub fn matrix(&self, d: &DistanceMatrix, t: f64) -> Result<Vec<f32>> {
        let p = self.potentials()?;
        let (alpha, t) = (self.alpha, t as f32);
        Ok((0..d.rows)
            .flat_map(|i| {
                let p = &p;
                (0..d.cols).map(move |j| {
                    let x = (p.f[i] as f32 + (p.g[j] as f32 + alpha) - d.at(i, j) as f32) / t;
                    x.clamp(-CLAMP_F32, CLAMP_F32).exp()
                })
            })
            .collect())
    }
}

/// Full SoftAssign on the GPU, each tile used at most `repeat` times, discretised on the host.
pub fn solve(
    ctx: &Context,
    d: &DistanceMatrix,
    params: &SoftAssignParams,
    repeat: usize,
    progress: &ProgressBar,
) -> Result<Vec<usize>> {
    let state = GpuSoftAssign::new(ctx, d, params, repeat)?;
    state.anneal(params, progress)?;
    Ok(discretise(d, &state.potentials()?, repeat))
}

/// Relative bound on M between runs of the atomic kernel and between it and the passes
/// kernel after one cooling iteration (100 Sinkhorn iterations), floor 1e-6: each column
/// sum adds up to 128 block sums in an order that varies (f32, about 128 x 6e-8 = 8e-6
/// relative at worst), and Sinkhorn's normalisations do not amplify it. The tests check it
/// (measured on lavapipe: 0.8e-6 to 2e-6 at 40 x 20 to 130 x 4099, about the f32 error
/// either kernel has against the f64 CPU twin).
pub const ATOMIC_ORDER_BOUND: f64 = 2e-5;

/// Relative bound on M between the atomic kernel with scaled iterations (K in f16) and the
/// f64 CPU twin, the passes kernel or itself without them, after one cooling iteration,
/// floor 1e-6: twice f16's unit roundoff (2^-11 relative per entry of K), for the entry's
/// rounding and the scalings', which average the roundings of a row's or a column's
/// entries (measured on lavapipe: 1.5e-4 at 1 x 4, 1.8e-5 to 2.6e-5 at 37 x 1100 and
/// 300 x 1028).
pub const SCALED_BOUND: f64 = 1e-3;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::softassign::CpuSoftAssign;
    use engine::testing;

    /// M after one cooling iteration of `gpu` on `d` at the first temperature.
    fn cooled(ctx: &Context, gpu: &GpuSoftAssign, d: &DistanceMatrix, params: &SoftAssignParams) -> Vec<f32> {
        let t = params.temperature(0, scale_of(d));
        let mut rec = ctx.recorder().unwrap();
        gpu.record_cooling_iteration(&mut rec, t, params, false).unwrap();
        rec.submit().unwrap().wait().unwrap();
        gpu.matrix(d, t).unwrap()
    }

    /// M after one cooling iteration of `gpu` against the f64 CPU reference: within 1e-4
    /// relative (floor 1e-6), and every real row summing to ~1. Returns the error.
    fn check_against_cpu(
        ctx: &Context,
        gpu: &GpuSoftAssign,
        d: &DistanceMatrix,
        params: &SoftAssignParams,
        repeat: usize,
    ) -> f64 {
        let (m, n) = (d.rows, d.cols);
        let kernel = gpu.kernel();
        let p = cooled(ctx, gpu, d, params);
        let mut cpu = CpuSoftAssign::new(d, params, repeat);
        cpu.cooling_iteration(params.temperature(0, scale_of(d)), params);
        let err = testing::max_rel_error(&p, &cpu.matrix(params.temperature(0, scale_of(d))), 1e-6);
        let bound = if gpu.atomic_shape().is_some_and(|s| s.scaled) { SCALED_BOUND } else { 1e-4 };
        assert!(err < bound, "{kernel:?} {m}x{n} x{repeat}: M differs by {err:e} (relative, floor 1e-6)");
        for i in 0..m {
            let s: f32 = p[i * n..(i + 1) * n].iter().sum();
            assert!((s - 1.0).abs() < 0.05, "{kernel:?} {m}x{n}: row {i} sums to {s}");
        }
        err
    }

    fn check_cooling_iteration(ctx: &Context, m: usize, n: usize, repeat: usize, kernel: Kernel) {
        let params = SoftAssignParams { alpha: 0.3, ..Default::default() };
        let d = crate::bench::matrix(m, n, 11);
        let gpu = GpuSoftAssign::with_kernel(ctx, &d, &params, repeat, kernel).unwrap();
        assert_eq!(gpu.kernel(), kernel);
        check_against_cpu(ctx, &gpu, &d, &params, repeat);
    }

    /// f32 M of two runs within `bound` relative (floor 1e-6).
    fn assert_close(a: &[f32], b: &[f32], bound: f64, what: &str) -> f64 {
        let wide: Vec<f64> = b.iter().map(|&v| f64::from(v)).collect();
        let err = testing::max_rel_error(a, &wide, 1e-6);
        assert!(err < bound, "{what}: M differs by {err:e} (relative, floor 1e-6; bound {bound:e})");
        err
    }

    /// Awkward sizes (m, n, repeat) for the atomic kernel: n not a multiple of 4 (no scaled
    /// iterations), more columns than invocations, a single row, repeats, and n a multiple
    /// of 4 for scaled iterations (37 x 1100, 300 x 1028, 1 x 4, 41 x 20, 130 x 4096).
    const AWKWARD: [(usize, usize, usize); 9] = [
        (37, 1100, 1),
        (300, 1027, 2),
        (300, 1028, 2),
        (130, 4099, 1),
        (1, 3, 1),
        (1, 4, 1),
        (40, 21, 3),
        (41, 20, 3),
        (130, 4096, 1),
    ];

    /// The atomic kernel in its planned shape at [`AWKWARD`] sizes against the f64 CPU twin, the passes
    /// kernel, and a second run of itself (the order of the atomic additions varies); where
    /// n % 4 == 0, with scaled iterations against the CPU twin and the planned shape.
    #[test]
    fn atomic_kernel_matches_cpu_reference_and_passes() {
        let ctx = testing::context();
        let params = SoftAssignParams { alpha: 0.3, ..Default::default() };
        for (m, n, repeat) in AWKWARD {
            let d = crate::bench::matrix(m, n, 11);
            let atomic = GpuSoftAssign::with_kernel(ctx, &d, &params, repeat, Kernel::Atomic).unwrap();
            assert_eq!(atomic.kernel(), Kernel::Atomic);
            let cpu_err = check_against_cpu(ctx, &atomic, &d, &params, repeat);
            atomic.reset().unwrap();
            let run1 = cooled(ctx, &atomic, &d, &params);
            atomic.reset().unwrap();
            let run2 = cooled(ctx, &atomic, &d, &params);
            let rerun_err =
                assert_close(&run1, &run2, ATOMIC_ORDER_BOUND, &format!("atomic {m}x{n} x{repeat}, two runs"));
            let passes = GpuSoftAssign::with_kernel(ctx, &d, &params, repeat, Kernel::Passes).unwrap();
            let what = format!("atomic vs passes {m}x{n} x{repeat}");
            let passes_err = assert_close(&run2, &cooled(ctx, &passes, &d, &params), ATOMIC_ORDER_BOUND, &what);
            println!("{m}x{n} x{repeat}: vs CPU {cpu_err:.1e}, rerun {rerun_err:.1e}, vs passes {passes_err:.1e}");
            let shape = atomic.atomic_shape().unwrap();
            assert!(!shape.scaled, "{m}x{n}: scaled iterations are planned for large matrices only");
            if n % 4 == 0 {
                let scaled = AtomicShape { scaled: true, ..shape };
                let scaled = GpuSoftAssign::with_atomic_shape(ctx, &d, &params, repeat, scaled).unwrap();
                let cpu_err = check_against_cpu(ctx, &scaled, &d, &params, repeat);
                scaled.reset().unwrap();
                let what = format!("scaled vs log form {m}x{n} x{repeat}");
                let log_err = assert_close(&cooled(ctx, &scaled, &d, &params), &run2, SCALED_BOUND, &what);
                println!("{m}x{n} x{repeat} scaled: vs CPU {cpu_err:.1e}, vs log form {log_err:.1e}");
            }
        }
        testing::assert_no_validation_messages();
    }

    /// An IEEE half-precision value.
    fn half_to_f32(h: u16) -> f32 {
        let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
        let fraction = f32::from(h & 0x3ff);
        sign * match (h >> 10) & 0x1f {
            0 => fraction * 2f32.powi(-24),
            31 if fraction == 0.0 => f32::INFINITY,
            31 => f32::NAN,
            e => (1.0 + fraction / 1024.0) * 2f32.powi(i32::from(e) - 15),
        }
    }

    /// The first dispatch of a scaled cooling iteration on its own (`sinkhorn_atomic.comp`
    /// with WRITE_K): after one Sinkhorn iteration from f = g = 0, K is the row-normalised
    /// exp((alpha - d) / t), computed here in f64, within f16's unit roundoff (2^-11
    /// relative; floor 2^-14, f16's smallest normal value, under which it keeps 2^-24
    /// absolute). `sinkhorn_scaled.comp` is then checked by the cooling iterations above.
    #[test]
    fn the_first_dispatch_stores_the_row_normalised_kernel_in_f16() {
        let ctx = testing::context();
        let params = SoftAssignParams { alpha: 0.3, stabilisations: 1, sinkhorn: 1, ..Default::default() };
        for (m, n, seed) in [(37, 1100, 13), (5, 4, 14), (130, 4096, 15)] {
            let d = crate::bench::matrix(m, n, seed);
            let shape = AtomicShape { scaled: true, ..AtomicShape::planned(ctx.info(), m, n) };
            let gpu = GpuSoftAssign::with_atomic_shape(ctx, &d, &params, 1, shape).unwrap();
            cooled(ctx, &gpu, &d, &params);
            let words = ctx.download(gpu.atomic.as_ref().unwrap().f16_kernel().unwrap()).unwrap();
            let got: Vec<f32> =
                words.iter().flat_map(|&w| [half_to_f32(w as u16), half_to_f32((w >> 16) as u16)]).collect();
            let (t, alpha) = (params.temperature(0, scale_of(&d)), params.alpha * scale_of(&d));
            let want: Vec<f64> = (0..m)
                .flat_map(|i| {
                    let e: Vec<f64> = (0..n).map(|j| ((alpha - d.at(i, j)) / t).exp()).collect();
                    let s: f64 = e.iter().sum();
                    e.into_iter().map(move |v| v / s)
                })
                .collect();
            let err = testing::max_rel_error(&got, &want, 2f64.powi(-14));
            assert!(err < 2f64.powi(-11), "{m}x{n}: K differs by {err:e} (relative, floor 2^-14)");
        }
        testing::assert_no_validation_messages();
    }

    /// Every shape knob of the atomic kernel: several 4-column groups per invocation (a
    /// 64-wide workgroup on 1100 columns), 1-3 rows per step with a partial last step,
    /// scalar and vec4 loads, few and many row blocks (blocks of uneven rows), and n an exact
    /// multiple of the columns a workgroup owns (no masks).
    #[test]
    fn atomic_kernel_shapes_match_cpu_reference() {
        let ctx = testing::context();
        let params = SoftAssignParams { alpha: 0.3, ..Default::default() };
        let d = crate::bench::matrix(37, 1100, 3);
        let full = crate::bench::matrix(29, 1024, 4);
        for (d, workgroup, rows_per_step, vec4, blocks, scaled) in [
            (&d, 64, 1, true, 37, true),
            (&d, 64, 3, false, 5, false),
            (&d, 256, 2, true, 1, false),
            (&d, 256, 2, true, 1, true),
            (&d, 128, 2, false, 8, false),
            (&d, 64, 4, true, 3, true),
            (&full, 128, 1, true, 5, false),
            (&full, 128, 1, true, 5, true),
            (&full, 64, 3, true, 4, true),
        ] {
            let shape = AtomicShape { workgroup, rows_per_step, vec4, blocks, scaled };
            let gpu = GpuSoftAssign::with_atomic_shape(ctx, d, &params, 1, shape).unwrap();
            assert_eq!(gpu.atomic_shape(), Some(shape));
            check_against_cpu(ctx, &gpu, d, &params, 1);
        }
        let bad = [
            AtomicShape { workgroup: 96, rows_per_step: 1, vec4: false, blocks: 4, scaled: false },
            AtomicShape { workgroup: 64, rows_per_step: 5, vec4: false, blocks: 4, scaled: false },
            AtomicShape { workgroup: 64, rows_per_step: 1, vec4: false, blocks: 38, scaled: false },
            AtomicShape { workgroup: 64, rows_per_step: 1, vec4: false, blocks: 0, scaled: false },
            AtomicShape { workgroup: 64, rows_per_step: 1, vec4: false, blocks: 4, scaled: true },
        ];
        for shape in bad {
            assert!(GpuSoftAssign::with_atomic_shape(ctx, &d, &params, 1, shape).is_err(), "{shape:?}");
        }
        let odd = crate::bench::matrix(5, 1027, 3);
        let vec4 = AtomicShape { workgroup: 64, rows_per_step: 1, vec4: true, blocks: 4, scaled: false };
        assert!(GpuSoftAssign::with_atomic_shape(ctx, &odd, &params, 1, vec4).is_err());
        testing::assert_no_validation_messages();
    }

    /// Several cooling iterations in one command buffer chain through the column-sum slots
    /// (the finishing dispatch zeroes them and folds the scalings in): the atomic kernel's
    /// annealed potentials, with scaled iterations (n = 252) and without (n = 250), give the
    /// same assignment quality as the passes kernel on matrices too large for one workgroup.
    #[test]
    fn atomic_full_solve_matches_passes() {
        let ctx = testing::context();
        let params = SoftAssignParams { iterations: 60, stabilisations: 3, sinkhorn: 3, ..Default::default() };
        for n in [250, 252] {
            let d = crate::bench::matrix(60, n, 5);
            assert!(!workgroup_kernel_fits(ctx, d.rows, d.cols));
            let optimum = d.cost(&crate::exact::solve(&d, &ProgressBar::hidden()));
            let ratio = |kernel| {
                let state = match kernel {
                    Kernel::Atomic => {
                        let shape = AtomicShape { scaled: n % 4 == 0, ..AtomicShape::planned(ctx.info(), 60, n) };
                        GpuSoftAssign::with_atomic_shape(ctx, &d, &params, 1, shape).unwrap()
                    }
                    _ => GpuSoftAssign::with_kernel(ctx, &d, &params, 1, kernel).unwrap(),
                };
                state.anneal(&params, &ProgressBar::hidden()).unwrap();
                let assignment = discretise(&d, &state.potentials().unwrap(), 1);
                d.check_assignment(&assignment).unwrap();
                d.cost(&assignment) / optimum
            };
            let (atomic, passes) = (ratio(Kernel::Atomic), ratio(Kernel::Passes));
            assert!(atomic < 1.03, "60x{n}: atomic softassign / exact = {atomic}");
            assert!((atomic - passes).abs() < 1e-3, "60x{n}: atomic {atomic} vs passes {passes}");
        }
        testing::assert_no_validation_messages();
    }

    /// The passes kernel at shapes that exercise several columns per invocation, several
    /// rows per block with a partial last block, and a single row; (37, 20) with 3 uses per
    /// tile scales columns to a capacity of 3.
    #[test]
    fn passes_match_cpu_reference() {
        let ctx = testing::context();
        for (m, n, repeat) in [(1, 3, 1), (37, 101, 1), (5, 1500, 1), (299, 301, 1), (37, 20, 3)] {
            check_cooling_iteration(ctx, m, n, repeat, Kernel::Passes);
        }
        testing::assert_no_validation_messages();
    }

    /// The one-workgroup kernel at awkward shapes: a single row, more columns than
    /// invocations (one slice owning several columns), n not dividing the workgroup (idle
    /// invocations in the column sums), a tall matrix (150 patches on 7 tiles used 25 times each), and repeats. `new` picks it wherever
    /// it fits.
    #[test]
    fn workgroup_kernel_matches_cpu_reference() {
        let ctx = testing::context();
        for (m, n, repeat) in [(1, 3, 1), (3, 1100, 1), (37, 101, 1), (57, 61, 1), (150, 7, 25), (37, 20, 3)] {
            assert!(workgroup_kernel_fits(ctx, m, n), "{m}x{n} fits the smallest shared memory (32 KiB)");
            check_cooling_iteration(ctx, m, n, repeat, Kernel::Workgroup);
        }
        let d = crate::bench::matrix(37, 101, 1);
        let params = SoftAssignParams::default();
        assert_eq!(GpuSoftAssign::new(ctx, &d, &params, 1).unwrap().kernel(), Kernel::Workgroup);
        let d = crate::bench::matrix(299, 301, 1);
        let large = if ctx.info().shader_buffer_float32_atomic_add { Kernel::Atomic } else { Kernel::Passes };
        assert_eq!(GpuSoftAssign::new(ctx, &d, &params, 1).unwrap().kernel(), large);
        assert!(GpuSoftAssign::with_kernel(ctx, &d, &params, 1, Kernel::Workgroup).is_err());
        testing::assert_no_validation_messages();
    }

    #[test]
    fn full_solve_is_valid_and_near_optimal() {
        let ctx = testing::context();
        let d = crate::bench::matrix(24, 40, 5);
        let assignment = solve(ctx, &d, &SoftAssignParams::default(), 1, &ProgressBar::hidden()).unwrap();
        d.check_assignment(&assignment).unwrap();
        let optimum = d.cost(&crate::exact::solve(&d, &ProgressBar::hidden()));
        let ratio = d.cost(&assignment) / optimum;
        assert!(ratio < 1.03, "softassign / exact = {ratio}");
        testing::assert_no_validation_messages();
    }
}
