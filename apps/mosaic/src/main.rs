//! `mosaic`: photomosaics without repeated tiles (see `mosaic --help`).

mod cli;

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Subcommand;
use kit::Backend;
use mosaic::compose::{self, CellLayout};
use mosaic::index::{self, IndexParams};
use mosaic::solve::{self, Method};
use mosaic::DistanceMatrix;

use cli::args::{BenchCmd, BuildArgs, DemoArgs, DistanceArgs, IndexArgs, SolveArgs};
use cli::report::{BuildReport, CellTile, DistanceReport, IndexReport, SolveReport};

#[derive(Subcommand)]
enum Command {
    /// Solve the assignment for a distance matrix D.npy (rows = patches, columns = tiles)
    #[command(
        after_help = "Examples:\n  mosaic solve --distance D.npy --method softassign\n  mosaic solve --distance D.npy --method exact --json\n  mosaic solve --distance D.npy --method exact --repeat 4\n  mosaic solve --distance D.npy --method exact --min-distance 2 --grid 40x30"
    )]
    Solve(SolveArgs),
    /// Distance matrix (Eq. 1) between the patches of a target and the tiles of a folder
    #[command(after_help = "Examples:\n  mosaic distance --target photo.jpg --tiles tiles/ --grid 30x20 --out D.npy")]
    Distance(DistanceArgs),
    /// Build a mosaic image: index tiles, distances, solve, render
    #[command(
        after_help = "Examples:\n  mosaic build --target photo.jpg --tiles tiles/ --grid 30x20 --method softassign --out mosaic.png\n  mosaic build --target photo.jpg --tiles tiles/ --grid 16x12 --method exact --backend cpu --out mosaic.jpg --quality 90\n  mosaic build --target photo.jpg --tiles tiles/ --grid 80x60 --repeat 4 --tint 0.3 --method greedy --tile-px 100 --out poster.tif --assignment poster.csv\n  mosaic build --target photo.jpg --tiles tiles/ --grid 40x40 --min-distance 3 --method exact --out spaced.png\n  mosaic build --target photo.jpg --tiles tiles/ --layout adaptive --min-cell 8 --max-cell 64 --repeat 8 --metric ciede2000 --method exact --out adaptive.png"
    )]
    Build(BuildArgs),
    /// Index a tile folder (recursively) into its cache file
    #[command(
        after_help = "Examples:\n  mosaic index tiles/\n  mosaic index tiles/ --cells 4x4 --aspect 1.5 --cache /tmp/mosaic-cache --json"
    )]
    Index(IndexArgs),
    /// Benchmarks on synthetic data (GPU and CPU reference), one line per measurement
    #[command(
        after_help = "Examples:\n  mosaic bench --quick\n  mosaic bench --device 0\n  mosaic bench --size 2048x8192 --skip-cpu --json\n  mosaic bench --costs matrices/ --size 4096x4096 --json"
    )]
    Bench(BenchCmd),
    /// A photomosaic of a sample photo from tiles cut from the others: exact, greedy and (on a GPU) SoftAssign; PNGs and JSON
    #[command(after_help = "Examples:\n  mosaic demo --out demo/\n  mosaic demo --out demo/ --backend cpu --json")]
    Demo(DemoArgs),
}

fn main() -> ExitCode {
    let app = clap::Command::new("mosaic")
        .about("Photomosaics without repeated tiles: greedy, annealing, SoftAssign on the GPU, exact");
    kit::main_subcommands(app, env!("CARGO_PKG_VERSION"), run)
}

fn run(command: Command) -> Result<()> {
    match command {
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

/// Refuses an output that would overwrite one of the tiles.
fn check_not_tile(out: &Path, tiles: &Path) -> Result<()> {
    if index::is_tile(tiles, out) {
        bail!("{}: is one of the tiles in {}; refusing to overwrite it", out.display(), tiles.display());
    }
    Ok(())
}

fn cmd_solve(args: SolveArgs) -> Result<()> {
    // greedy, anneal and exact have no GPU path: they run on the CPU, and the envelope says so.
    let backend = args.method.backend(args.common.backend, args.params.repeat());
    kit::report::set_backend(backend);
    let mut options = args.params.options(backend);
    if args.params.min_distance.is_some() {
        let grid =
            args.grid.ok_or_else(|| kit::Usage("--min-distance needs --grid COLSxROWS: the cells' places".into()))?;
        options.spacing = args.params.spacing(grid);
    }
    let d = DistanceMatrix::load_npy(&args.distance)?;
    d.check_capacity(options.repeat).map_err(|e| anyhow::anyhow!("{}: {e}", args.distance.display()))?;
    let ctx = match backend {
        Backend::Gpu => Some(kit::cli::open_one(args.common.device())?),
        Backend::Cpu => None,
    };
    let solved = solve::run(args.method, &d, &options, ctx.as_ref())?;
    kit::emit(&SolveReport::new(&solved, &d, &options), &[]);
    Ok(())
}

fn cmd_distance(args: DistanceArgs) -> Result<()> {
    kit::output::check_file(&args.out, &["npy"], &[&args.problem.target])?;
    check_not_tile(&args.out, &args.problem.tiles)?;
    let ctx = args.common.open_one()?;
    let problem = args.problem.prepare()?;
    let start = Instant::now();
    let d = problem.distances(args.common.backend, ctx.as_ref())?;
    let distance_ms = start.elapsed().as_secs_f64() * 1e3;
    kit::npy::write_f32(&args.out, &[d.rows, d.cols], &d.to_f32())?;
    let record = DistanceReport {
        metric: problem.metric,
        patches: d.rows,
        tiles: d.cols,
        index: problem.index_stats,
        distance_ms,
    };
    kit::emit(&record, &[&args.out]);
    Ok(())
}

fn cmd_build(args: BuildArgs) -> Result<()> {
    kit::output::check_file(&args.out, kit::image::IMAGE_EXTENSIONS, &[&args.problem.target])?;
    check_not_tile(&args.out, &args.problem.tiles)?;
    if let Some(csv) = &args.assignment {
        kit::output::check_file(csv, &["csv"], &[&args.problem.target, &args.out])?;
        check_not_tile(csv, &args.problem.tiles)?;
    }
    check_tiles_named(&args.problem.tiles, args.assignment.is_some())?;
    let backend = args.common.backend;
    let ctx = args.common.open_one()?;
    let mut options = args.params.options(backend);
    if let CellLayout::Grid(grid) = args.problem.layout()? {
        options.spacing = args.params.spacing(grid);
    } else if args.params.min_distance.is_some() {
        bail!(kit::Usage(
            "--min-distance is for --layout grid: adaptive cells have no common cell size to count it in".into()
        ));
    }
    let problem = args.problem.prepare()?;
    problem.check_capacity(options.repeat)?;
    if let Some(spacing) = &options.spacing {
        spacing.check_fits(problem.patches.len(), problem.tiles.len())?;
    }
    let layout = problem.checked_layout(args.tile_px)?;
    kit::image::check_size(&args.out, layout.width() as u64, layout.height() as u64, kit::image::Layout::Rgb8)?;
    let d = problem.distances(backend, ctx.as_ref())?;
    let look = compose::Look { tile_px: args.tile_px, tint: args.tint as f32 };
    let built = compose::build(&problem, &d, args.method, &options, &look, ctx.as_ref())?;
    let cells = cell_tiles(&problem, &args.problem.tiles, &built.solved.assignment);
    // Before anything is written: a comparison that fails leaves no outputs behind.
    let exact_cost = match args.method {
        Method::Exact => Some(built.solved.cost),
        _ if args.compare_exact => Some(solve::run(Method::Exact, &d, &options, None)?.cost),
        _ => None,
    };
    let likeness = mosaic::likeness::Likeness::measure(&d, &built.solved.assignment);
    if let Some(text) = likeness.warning(options.repeat) {
        warn(&text);
    }
    // The image and the CSV land together or not at all.
    let mut staged = kit::output::Staged::new();
    let save = kit::image::SaveOptions { jpeg_quality: args.quality };
    let (w, h) = (built.layout.width(), built.layout.height());
    kit::image::stage(&mut staged, &args.out, w, h, &built.rgb, kit::image::Layout::Rgb8, save)?;
    if let Some(csv) = &args.assignment {
        staged.write(csv, |out| write_csv(out, &cells))?;
    }
    staged.commit()?;
    let record = BuildReport {
        method: args.method,
        metric: problem.metric,
        distance_backend: backend,
        solve_backend: args.method.backend(backend, options.repeat),
        render_backend: backend,
        cost: built.solved.cost,
        ratio_to_exact: exact_cost.and_then(|e| cli::report::ratio_to_exact(built.solved.cost, e)),
        exact_cost,
        patches: d.rows,
        tiles: d.cols,
        tiles_used: built.solved.assignment.iter().collect::<std::collections::HashSet<_>>().len(),
        width: w,
        height: h,
        repeat: mosaic::matrix::effective_repeat(options.repeat, d.rows),
        min_distance: args.params.min_distance,
        lower_bound: built.solved.lower_bound,
        optimal: built.solved.optimal,
        tint: args.tint,
        solve_ms: built.solved.solve_ms,
        render_ms: built.render_ms,
        index: problem.index_stats,
        likeness,
        out: args.out.clone(),
    };
    let mut written = vec![args.out.as_path()];
    written.extend(args.assignment.as_deref());
    kit::emit(&record, &written);
    Ok(())
}

/// Refuses, before any work, a tile folder whose path is not valid UTF-8 when `--assignment`
/// names each tile by it: the names would be lossy, naming no file. Tiles whose own names are
/// not UTF-8 are skipped by the index (docs/formats.md).
fn check_tiles_named(tiles: &Path, csv: bool) -> Result<()> {
    if tiles.to_str().is_none() && csv {
        bail!(
            "{tiles:?}: the tile folder's path is not valid UTF-8, and --assignment names every tile by it; \
             give the folder by a path that is (cd into it and pass --tiles ., or pass a symbolic link to it)"
        );
    }
    Ok(())
}

/// The tile shown in each cell (row-major), by its path: the tile folder as given, joined
/// with the tile's path inside it; with the cell's place on the grid (for adaptive cells,
/// its top-left cell of the smallest size) and its rectangle in target pixels.
fn cell_tiles(problem: &compose::Problem, tiles: &Path, assignment: &[usize]) -> Vec<CellTile> {
    let cols = problem.grid.0;
    assignment
        .iter()
        .enumerate()
        .map(|(k, &j)| {
            let (col, row) = match &problem.blocks {
                Some(blocks) => (blocks[k].col, blocks[k].row),
                None => (k % cols, k / cols),
            };
            CellTile {
                col,
                row,
                rect: problem.rects[k],
                tile: tiles.join(&problem.tiles.paths[j]).display().to_string(),
            }
        })
        .collect()
}

/// `col,row,x,y,w,h,tile` and one line per cell; a path with a comma, a quote or a line
/// break is quoted as RFC 4180 says.
fn write_csv(out: &mut impl std::io::Write, cells: &[CellTile]) -> std::io::Result<()> {
    writeln!(out, "col,row,x,y,w,h,tile")?;
    for cell in cells {
        let tile = if cell.tile.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", cell.tile.replace('"', "\"\""))
        } else {
            cell.tile.clone()
        };
        let (x, y, w, h) = cell.rect;
        writeln!(out, "{},{},{x},{y},{w},{h},{tile}", cell.col, cell.row)?;
    }
    Ok(())
}

fn cmd_index(args: IndexArgs) -> Result<()> {
    let start = Instant::now();
    let params = IndexParams { cells: (args.cells.0, args.cells.1), thumb: compose::thumb_size(args.aspect) };
    let cache_dir = args.cache.dir();
    let (tiles, stats) = index::index(&args.dir, &params, cache_dir.as_deref(), warn)?;
    let cache = stats.cache.clone();
    let index_ms = start.elapsed().as_secs_f64() * 1e3;
    let record = IndexReport { tiles: tiles.len(), stats, cache: cache.clone(), index_ms };
    let written: Vec<&Path> = cache.iter().map(|c| c.as_path()).collect();
    kit::emit(&record, &written);
    Ok(())
}

/// The sizes of `mosaic bench --costs` without `--size`: the photomosaic sizes and
/// two squares.
const COST_SIZES: [(usize, usize); 4] = [(2048, 8192), (4096, 16384), (4096, 4096), (10000, 10000)];

fn cmd_bench(args: BenchCmd) -> Result<()> {
    if let Some(dir) = &args.costs {
        kit::output::check_folder(dir, &[])?;
    }
    let ctx = kit::cli::open_one(&args.bench.device)?;
    if let Some(dir) = &args.costs {
        let sizes = if args.sizes.is_empty() { COST_SIZES.to_vec() } else { args.sizes.clone() };
        mosaic::costs::run(&ctx, dir, &sizes, args.skip_cpu, |record| kit::emit(record, &[record.file.as_path()]))?;
        return Ok(());
    }
    let options = mosaic::bench::Options { quick: args.bench.quick, sizes: args.sizes, skip_cpu: args.skip_cpu };
    mosaic::bench::run(&ctx, &options, |record| kit::emit(record, &[]))?;
    Ok(())
}

fn cmd_demo(args: DemoArgs) -> Result<()> {
    kit::output::check_folder(&args.out, &[])?;
    let ctx = args.common.open_one()?;
    let mut options = args.params.options(args.common.backend);
    options.spacing = args.params.spacing(mosaic::demo::GRID);
    let report = mosaic::demo::run(ctx.as_ref(), &args.out, &options)?;
    let files: Vec<&Path> = report.files.iter().map(|p| p.as_path()).collect();
    kit::emit(&report, &files);
    Ok(())
}
