//! `mosaic`: photomosaics without repeated tiles (see `mosaic --help`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use clap::{Args, Parser, Subcommand};
use engine::cli::{print_json, Backend, CommonArgs};
use mosaic::anneal::AnnealParams;
use mosaic::compose::{self, Dims};
use mosaic::index::{self, IndexParams};
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
    /// Distance matrix (Eq. 1) between the patches of a target and the tiles of a folder
    Distance(DistanceArgs),
    /// Build a mosaic image: index tiles, distances, solve, render
    Build(BuildArgs),
    /// Index a tile folder (recursively) into its cache file
    Index(IndexArgs),
    /// Benchmarks on synthetic data (GPU and CPU reference), one JSON object per line
    Bench(engine::cli::BenchArgs),
    /// Generate sample data, build mosaics with SoftAssign and exact, write PNGs and JSON
    Demo(DemoArgs),
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

/// The mosaic problem: a target image cut into a grid of patches, and a tile folder.
#[derive(Args)]
struct ProblemArgs {
    /// Target image
    #[arg(long)]
    target: PathBuf,
    /// Folder of tile images (searched recursively)
    #[arg(long)]
    tiles: PathBuf,
    /// Patch grid, COLSxROWS
    #[arg(long)]
    grid: Dims,
    /// Feature cells per patch and tile, UxV
    #[arg(long, default_value = "4x4")]
    cells: Dims,
}

impl ProblemArgs {
    /// Indexes the tiles and measures the target's patches.
    fn prepare(&self) -> Result<compose::Problem> {
        Ok(compose::prepare(&self.target, &self.tiles, self.grid, self.cells, warn)?)
    }
}

#[derive(Args)]
struct DistanceArgs {
    #[command(flatten)]
    problem: ProblemArgs,
    /// Output .npy (float32, shape (m, n), rows = patches row-major over the grid)
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args)]
struct BuildArgs {
    #[command(flatten)]
    problem: ProblemArgs,
    /// Assignment method
    #[arg(long, value_enum)]
    method: Method,
    /// Output PNG
    #[arg(long)]
    out: PathBuf,
    /// Width of one tile in the output, in pixels (height follows the patch aspect)
    #[arg(long, default_value_t = 32)]
    tile_px: usize,
    /// Also solve exactly and report the cost relative to the optimum
    #[arg(long)]
    compare_exact: bool,
    #[command(flatten)]
    params: MethodArgs,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args)]
struct IndexArgs {
    /// Folder of tile images (searched recursively)
    dir: PathBuf,
    /// Feature cells, UxV
    #[arg(long, default_value = "4x4")]
    cells: Dims,
    /// Patch aspect (width / height) the tiles are cropped to
    #[arg(long, default_value_t = 1.0)]
    aspect: f64,
    /// Print one JSON object instead of text
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct DemoArgs {
    /// Output folder (created if missing)
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    params: MethodArgs,
    #[command(flatten)]
    common: CommonArgs,
}

/// Errors print as one line (with their causes), never as a backtrace; exit status 1.
fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mosaic: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Solve(args) => cmd_solve(args),
        Command::Distance(args) => cmd_distance(args),
        Command::Build(args) => cmd_build(args),
        Command::Index(args) => cmd_index(args),
        Command::Bench(args) => cmd_bench(args),
        Command::Demo(args) => cmd_demo(args),
    }
}

fn warn(message: &str) {
    eprintln!("mosaic: warning: {message}");
}

fn gpu_context(common: &CommonArgs) -> Result<Option<engine::Context>> {
    Ok(match common.backend {
        Backend::Gpu => Some(open(common.device.as_deref())?),
        Backend::Cpu => None,
    })
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

fn cmd_bench(args: engine::cli::BenchArgs) -> Result<()> {
    let ctx = open(args.device.as_deref())?;
    mosaic::bench::run(&ctx, args.quick, |v| print_json(&v))?;
    Ok(())
}

fn cmd_distance(args: DistanceArgs) -> Result<()> {
    engine::io::check_not_input(&args.out, &[&args.problem.target])?;
    let ctx = gpu_context(&args.common)?;
    let start = Instant::now();
    let problem = args.problem.prepare()?;
    let d = problem.distances(args.common.backend, ctx.as_ref())?;
    engine::io::write_npy_f32(&args.out, &[d.rows, d.cols], &d.to_f32())?;
    if args.common.json {
        print_json(&json!({
            "out": args.out, "patches": d.rows, "tiles": d.cols, "index": problem.index_stats,
            "seconds": start.elapsed().as_secs_f64(),
        }));
    } else {
        println!("wrote {} ({} patches x {} tiles)", args.out.display(), d.rows, d.cols);
    }
    Ok(())
}

fn cmd_build(args: BuildArgs) -> Result<()> {
    engine::io::check_not_input(&args.out, &[&args.problem.target])?;
    if args.out.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase()) != Some("png".into()) {
        bail!("--out must name a .png file (got {})", args.out.display());
    }
    let ctx = gpu_context(&args.common)?;
    let options = args.params.options(args.common.backend);
    let start = Instant::now();
    let problem = args.problem.prepare()?;
    let d = problem.distances(args.common.backend, ctx.as_ref())?;
    let built = compose::build(&problem, &d, args.method, &options, args.tile_px, ctx.as_ref())?;
    engine::io::save_png_rgb8(&args.out, built.layout.width(), built.layout.height(), &built.rgb)?;
    let exact = if args.compare_exact && args.method != Method::Exact {
        Some(solve::run(Method::Exact, &d, &options, None)?.cost)
    } else if args.method == Method::Exact {
        Some(built.solved.cost)
    } else {
        None
    };
    let ratio = exact.map(|e| built.solved.cost / e);
    if args.common.json {
        print_json(&json!({
            "method": args.method.name(), "cost": built.solved.cost, "ratio_to_exact": ratio,
            "patches": d.rows, "tiles": d.cols, "tiles_used": built.solved.assignment.len(),
            "solve_seconds": built.solved.seconds, "seconds": start.elapsed().as_secs_f64(),
            "index": problem.index_stats, "out": args.out,
            "width": built.layout.width(), "height": built.layout.height(),
        }));
    } else {
        let ratio = ratio.map(|r| format!(" ({r:.4} x exact)")).unwrap_or_default();
        println!(
            "{}: {} patches from {} tiles, cost {:.1}{ratio}, solved in {:.3} s; wrote {} ({}x{})",
            args.method.name(),
            d.rows,
            d.cols,
            built.solved.cost,
            built.solved.seconds,
            args.out.display(),
            built.layout.width(),
            built.layout.height()
        );
    }
    Ok(())
}

fn cmd_index(args: IndexArgs) -> Result<()> {
    if !(args.aspect > 0.0 && args.aspect.is_finite()) {
        bail!("--aspect must be > 0 (got {})", args.aspect);
    }
    let start = Instant::now();
    let params = IndexParams { cells: (args.cells.0, args.cells.1), thumb: compose::thumb_size(args.aspect) };
    let (tiles, stats) = index::index(&args.dir, &params, warn)?;
    if args.json {
        print_json(&json!({
            "tiles": tiles.len(), "stats": stats, "cache": params.cache_path(&args.dir),
            "seconds": start.elapsed().as_secs_f64(),
        }));
    } else {
        println!(
            "{} tiles indexed ({} from cache, {} decoded, {} skipped) in {:.3} s; cache {}",
            tiles.len(),
            stats.from_cache,
            stats.decoded,
            stats.skipped,
            start.elapsed().as_secs_f64(),
            params.cache_path(&args.dir).display()
        );
    }
    Ok(())
}

fn cmd_demo(args: DemoArgs) -> Result<()> {
    let ctx = open(args.common.device.as_deref())?;
    let options = args.params.options(args.common.backend);
    let summary = mosaic::demo::run(&ctx, &args.out, &options)?;
    if args.common.json {
        print_json(&summary);
    } else {
        let m = &summary["methods"];
        println!(
            "mosaic demo: {} patches from {} tiles on {}: softassign cost {:.1} = {:.4} x exact in {:.2} s (greedy {:.4} x); wrote {}",
            summary["patches"],
            summary["tiles"],
            summary["device"].as_str().unwrap_or("?"),
            m["softassign"]["cost"].as_f64().unwrap_or(f64::NAN),
            m["softassign"]["ratio_to_exact"].as_f64().unwrap_or(f64::NAN),
            m["softassign"]["seconds"].as_f64().unwrap_or(f64::NAN),
            m["greedy"]["ratio_to_exact"].as_f64().unwrap_or(f64::NAN),
            args.out.display()
        );
    }
    Ok(())
}
