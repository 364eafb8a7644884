//! One entry point for every method, so the CLI, the demo and the benchmark run the same code.

use std::time::Instant;

use engine::cli::Backend;
use engine::Context;

use crate::anneal::{self, AnnealParams};
use crate::error::Result;
use crate::matrix::DistanceMatrix;
use crate::softassign::{self, SoftAssignParams};
use crate::{exact, greedy};

/// An assignment method.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Section 3.2: best match, then conflicts moved to the best free tile.
    Greedy,
    /// Section 3.3: simulated annealing from the greedy assignment (CPU, seeded).
    Anneal,
    /// Section 5: SoftAssign (GPU, or the CPU reference with --backend cpu).
    Softassign,
    /// The optimum (shortest augmenting paths, CPU, f64).
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
}

/// Everything a method may need besides D.
#[derive(Clone, Debug, Default)]
pub struct SolveOptions {
    pub backend: Backend,
    pub softassign: SoftAssignParams,
    pub anneal: AnnealParams,
}

/// A solved assignment with its cost (f64) and wall-clock time.
#[derive(Clone, Debug)]
pub struct Solved {
    pub method: Method,
    pub assignment: Vec<usize>,
    pub cost: f64,
    pub seconds: f64,
}

/// Runs `method` on `d`; `ctx` is needed only for SoftAssign on the GPU. The result is
/// checked to be a valid assignment before it is returned.
pub fn run(method: Method, d: &DistanceMatrix, options: &SolveOptions, ctx: Option<&Context>) -> Result<Solved> {
    let start = Instant::now();
    let assignment = match method {
        Method::Greedy => greedy::solve(d),
        Method::Anneal => anneal::solve(d, &options.anneal),
        Method::Exact => exact::solve(d),
        Method::Softassign => {
            options.softassign.validate().map_err(crate::MosaicError::InvalidInput)?;
            match (options.backend, ctx) {
                (Backend::Gpu, Some(ctx)) => softassign::gpu::solve(ctx, d, &options.softassign)?,
                (Backend::Gpu, None) => {
                    let ctx = Context::open(None)?;
                    softassign::gpu::solve(&ctx, d, &options.softassign)?
                }
                (Backend::Cpu, _) => softassign::cpu::solve(d, &options.softassign),
            }
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    d.check_assignment(&assignment)?;
    Ok(Solved { method, cost: d.cost(&assignment), assignment, seconds })
}
