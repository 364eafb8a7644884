//! One entry point for every method, so the CLI, the demo and the benchmark run the same code.

use std::time::Instant;

use engine::Context;
use indicatif::ProgressBar;
use kit::Backend;

use crate::anneal::{self, AnnealParams};
use crate::auction::ExactSolution;
use crate::error::{MosaicError, Result};
use crate::matrix::{effective_repeat, DistanceMatrix, Slots};
use crate::softassign::SoftAssignParams;
use crate::spacing::{self, Spacing};
use crate::{exact, greedy};

/// An assignment method.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Section 3.2: best match, then conflicts moved to the best free tile (CPU only).
    Greedy,
    /// Section 3.3: simulated annealing from the greedy assignment (CPU only, seeded).
    Anneal,
    /// Section 5: SoftAssign (GPU, or the CPU reference with --backend cpu).
    Softassign,
    /// The optimum: on the GPU (--repeat 1) the Hungarian method for square matrices of few
    /// levels, an auction with repair otherwise, both with an f64 certificate; or shortest
    /// augmenting paths on the CPU (f64).
    Exact,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Greedy => "greedy",
            Method::Anneal => "anneal",
            Method::Softassign => "softassign",
            Method::Exact => "exact",
        }
    }

    /// Whether the method has a GPU path; the others are sequential or branchy by nature and
    /// run on the CPU whatever `--backend` says.
    pub fn has_gpu_path(self) -> bool {
        matches!(self, Method::Softassign | Method::Exact)
    }

    /// The backend the method runs on when `backend` is asked for with `repeat` uses per
    /// tile (the GPU auction solves the problem without repeats only).
    pub fn backend(self, backend: Backend, repeat: usize) -> Backend {
        if self.has_gpu_path() && !(self == Method::Exact && repeat > 1) {
            backend
        } else {
            Backend::Cpu
        }
    }
}

/// Everything a method may need besides D.
#[derive(Clone, Debug)]
pub struct SolveOptions {
    pub backend: Backend,
    pub softassign: SoftAssignParams,
    pub anneal: AnnealParams,
    /// The most patches one tile may serve (`--repeat`; 1: no repeated tiles).
    pub repeat: usize,
    /// `--min-distance` on the patches' grid: the same tile never twice that close.
    pub spacing: Option<Spacing>,
}

impl Default for SolveOptions {
    fn default() -> Self {
        SolveOptions {
            backend: Backend::default(),
            softassign: SoftAssignParams::default(),
            anneal: AnnealParams::default(),
            repeat: 1,
            spacing: None,
        }
    }
}

/// Bytes per slot the exact solver and the annealing keep (potentials, distances, paths,
/// owners: a few words each).
const BYTES_PER_SLOT: u64 = 64;

/// A solved assignment with its cost (f64) and wall-clock time.
#[derive(Clone, Debug)]
pub struct Solved {
    pub method: Method,
    pub assignment: Vec<usize>,
    pub cost: f64,
    pub solve_ms: f64,
    /// For the exact method: the primal cost minus the lower bound (0 up to rounding when the
    /// optimum is certified).
    pub duality_gap: Option<f64>,
    /// For the exact method: a lower bound on the optimum (the dual objective of the
    /// potentials, or under `--min-distance` the best Lagrangian bound).
    pub lower_bound: Option<f64>,
    /// Whether the assignment is proved optimal (the exact method when the bound meets the
    /// cost; under `--min-distance` it may not, and is then a heuristic with a known gap).
    pub optimal: bool,
}

/// The exact optimum on the GPU: the Hungarian method where it suits the matrix (m <= n,
/// whole numbers, few levels: [`crate::hungarian::largest_level`]), else (or should its zero
/// list overflow) the auction; both certified in f64.
pub fn exact_on_gpu(ctx: &Context, d: &DistanceMatrix, progress: &ProgressBar) -> Result<ExactSolution> {
    if let Some(solution) = crate::gpu::hungarian::solve(ctx, d, crate::hungarian::largest_level(d.rows, d.cols))? {
        progress.set_position(d.rows as u64);
        return Ok(solution);
    }
    crate::gpu::auction::solve(ctx, d, progress)
}

/// The device `backend` runs on: `ctx` for the GPU (an error when there is none, since no
/// other device may be opened behind the caller's back), `None` for the CPU.
pub fn device(backend: Backend, ctx: Option<&Context>) -> Result<Option<&Context>> {
    match (backend, ctx) {
        (Backend::Gpu, Some(ctx)) => Ok(Some(ctx)),
        (Backend::Gpu, None) => Err(MosaicError::InvalidInput("the GPU backend was asked for without a device".into())),
        (Backend::Cpu, _) => Ok(None),
    }
}

/// Runs `method` on `d` with a progress bar (quiet off a terminal); `ctx` is the device
/// SoftAssign runs on with the GPU backend, and must be given then: no other device is ever
/// opened behind the caller's back. The result is checked to be a valid assignment before
/// it is returned. Each tile serves at most `options.repeat` patches; a matrix with more
/// patches than that covers is an error naming the smallest repeat that works.
pub fn run(method: Method, d: &DistanceMatrix, options: &SolveOptions, ctx: Option<&Context>) -> Result<Solved> {
    let repeat = options.repeat;
    d.check_capacity(repeat)?;
    if matches!(method, Method::Exact | Method::Anneal) {
        let slots = Slots::new(d, repeat).count as u64;
        kit::budget::check(slots.saturating_mul(BYTES_PER_SLOT), format!("{} over {slots} tile uses", method.name()))?;
    }
    let start = Instant::now();
    let steps = match method {
        Method::Greedy => 0,
        Method::Anneal => options.anneal.levels as u64,
        Method::Softassign => options.softassign.iterations as u64,
        Method::Exact => d.rows as u64,
    };
    let bar = if steps > 0 { kit::progress::bar(steps, method.name()) } else { ProgressBar::hidden() };
    let mut lower_bound = None;
    // The rule binds only where a tile may serve two patches.
    let spacing = options.spacing.as_ref().filter(|_| effective_repeat(repeat, d.rows) > 1);
    if let Some(s) = &options.spacing {
        s.check_fits(d.rows, d.cols)?;
    }
    let spaced = |assignment: Vec<usize>| match spacing {
        Some(s) => s.repair(d, &assignment, repeat),
        None => Ok(assignment),
    };
    let assignment = match method {
        Method::Greedy => spaced(greedy::solve(d, repeat))?,
        Method::Anneal => {
            let start = spaced(greedy::solve(d, repeat))?;
            anneal::solve(d, start, repeat, spacing, &options.anneal, &bar)
        }
        Method::Exact => match (options.backend, ctx, spacing) {
            (_, _, Some(s)) => {
                bar.set_length(spacing::MAX_ROUNDS as u64);
                let report = |round: usize, lower: f64, upper: f64| {
                    bar.set_position(round as u64 + 1);
                    bar.set_message(format!("gap {:.3}%", 100.0 * (upper - lower) / upper.max(f64::MIN_POSITIVE)));
                };
                let solution = spacing::solve_exact(d, s, repeat, report)?;
                lower_bound = Some(solution.lower_bound);
                solution.assignment
            }
            // Callers that only want the optimum's cost pass no device: the CPU solver runs.
            (Backend::Gpu, Some(ctx), None) if repeat == 1 => {
                let solution = exact_on_gpu(ctx, d, &bar)?;
                lower_bound = Some(d.cost(&solution.assignment) - solution.gap);
                solution.assignment
            }
            _ => {
                let solution = exact::solve_repeat(d, repeat, &bar);
                // The potentials are dual feasible by construction (see crate::exact).
                lower_bound = Some(solution.u.iter().sum::<f64>() + solution.v.iter().sum::<f64>());
                solution.assignment
            }
        },
        Method::Softassign => {
            options.softassign.validate().map_err(MosaicError::InvalidInput)?;
            spaced(match device(options.backend, ctx)? {
                Some(ctx) => crate::gpu::softassign::solve(ctx, d, &options.softassign, repeat, &bar)?,
                None => crate::cpu::softassign::solve(d, &options.softassign, repeat, &bar),
            })?
        }
    };
    bar.finish_and_clear();
    let solve_ms = start.elapsed().as_secs_f64() * 1e3;
    d.check_uses(&assignment, repeat)?;
    if let Some(s) = spacing {
        s.check(&assignment)?;
    }
    let cost = d.cost(&assignment);
    let duality_gap = lower_bound.map(|bound| cost - bound);
    let optimal = duality_gap.is_some_and(|gap| {
        method == Method::Exact && (spacing.is_none() || gap <= spacing::CERTIFIED_GAP * cost.max(1.0))
    });
    Ok(Solved { method, cost, assignment, solve_ms, duality_gap, lower_bound, optimal })
}
