//! `mosaic`: photomosaics without repeated tiles (see `mosaic --help`).

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Args, Parser, Subcommand};
use engine::cli::{print_json, Backend, CommonArgs};
use mosaic::anneal::AnnealParams;
use mosaic::softassign::SoftAssignParams;
use mosaic::solve::{self, Method, SolveOptions};
use mosaic::DistanceMatrix;
use serde_json::json;

#[derive(Parser)]
#[command(
    name = "mosaic",
    version,
    about = "Photomosaics without repeated tiles: greedy, annealing, SoftAssign on the GPU, exact"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Solve the assignment for a distance matrix D.npy (rows = patches, columns = tiles)
    Solve(SolveArgs),
    /// Benchmarks on synthetic data (GPU and CPU reference), one JSON object per line
    Bench(BenchArgs),
}

/// Method parameters shared by `solve` and `build`.
#[derive(Args, Clone, Debug)]
struct MethodArgs {
    /// Seed of the annealing's random moves
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// SoftAssign initial temperature, in units of the mean distance
    #[arg(long, default_value_t = SoftAssignParams::default().t0)]
    t0: f64,
    /// SoftAssign cooling factor per cooling iteration
    #[arg(long, default_value_t = SoftAssignParams::default().cooling)]
    cooling: f64,
    /// SoftAssign bias alpha (Eq. 9), in units of the mean distance
    #[arg(long, default_value_t = SoftAssignParams::default().alpha, allow_negative_numbers = true)]
    alpha: f64,
    /// SoftAssign temperature cooling iterations
    #[arg(long, default_value_t = SoftAssignParams::default().iterations)]
    iterations: u32,
    /// SoftAssign temperature stabilisation iterations per cooling iteration
    #[arg(long, default_value_t = SoftAssignParams::default().stabilisations)]
    stabilisations: u32,
    /// SoftAssign Sinkhorn iterations per stabilisation iteration
    #[arg(long, default_value_t = SoftAssignParams::default().sinkhorn)]
    sinkhorn: u32,
    /// Annealing temperature levels
    #[arg(long, default_value_t = AnnealParams::default().levels)]
    anneal_levels: u32,
    /// Annealing cooling factor per level
    #[arg(long, default_value_t = AnnealParams::default().cooling)]
    anneal_cooling: f64,
    /// Annealing moves per level, per patch
    #[arg(long, default_value_t = AnnealParams::default().moves_per_patch)]
    anneal_moves: u32,
}

impl MethodArgs {
    fn options(&self, backend: Backend) -> SolveOptions {
        SolveOptions {
            backend,
            softassign: SoftAssignParams {
                t0: self.t0,
                cooling: self.cooling,
                alpha: self.alpha,
                iterations: self.iterations,
                stabilisations: self.stabilisations,
                sinkhorn: self.sinkhorn,
            },
            anneal: AnnealParams {
                seed: self.seed,
                levels: self.anneal_levels,
                cooling: self.anneal_cooling,
                moves_per_patch: self.anneal_moves,
            },
        }
    }
}

#[derive(Args)]
struct SolveArgs {
    /// Distance matrix: float32 or float64 .npy of shape (m, n), m <= n
    #[arg(long)]
    distance: PathBuf,
    /// Assignment method
    #[arg(long, value_enum)]
    method: Method,
    #[command(flatten)]
    params: MethodArgs,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args)]
struct BenchArgs {
    /// Tiny sizes only (seconds on lavapipe)
    #[arg(long)]
    quick: bool,
    /// Device index or a substring of its name
    #[arg(long)]
    device: Option<String>,
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Solve(args) => cmd_solve(args),
        Command::Bench(args) => cmd_bench(args),
    }
}

fn open(device: Option<&str>) -> Result<engine::Context> {
    engine::Context::open(device).context("opening the Vulkan device")
}

fn cmd_solve(args: SolveArgs) -> Result<()> {
    let d = DistanceMatrix::load_npy(&args.distance)?;
    let options = args.params.options(args.common.backend);
    let ctx = match (args.method, args.common.backend) {
        (Method::Softassign, Backend::Gpu) => Some(open(args.common.device.as_deref())?),
        _ => None,
    };
    let solved = solve::run(args.method, &d, &options, ctx.as_ref())?;
    if args.common.json {
        print_json(&json!({
            "method": solved.method.name(),
            "cost": solved.cost,
            "assignment": solved.assignment,
            "seconds": solved.seconds,
        }));
    } else {
        println!(
            "{}: cost {:.6} for {} patches from {} tiles ({} tiles used once each) in {:.3} s",
            solved.method.name(),
            solved.cost,
            d.rows,
            d.cols,
            solved.assignment.len(),
            solved.seconds
        );
    }
    Ok(())
}

fn cmd_bench(args: BenchArgs) -> Result<()> {
    let ctx = open(args.device.as_deref())?;
    mosaic::bench::run(&ctx, args.quick, |v| print_json(&v))?;
    Ok(())
}
