//! Arguments of every subcommand, validated by clap before any work starts.

use std::path::PathBuf;

use clap::Args;
use kit::Backend;
use mosaic::anneal::AnnealParams;
use mosaic::colour::Metric;
use mosaic::compose::{self, CellLayout, Dims, MAX_ASPECT};
use mosaic::quadtree::Sizes;
use mosaic::softassign::SoftAssignParams;
use mosaic::solve::{Method, SolveOptions};
use mosaic::spacing::Spacing;

/// A number > 0 (clap value parser).
fn positive(text: &str) -> Result<f64, String> {
    let v = kit::cli::parse_finite(text)?;
    if v <= 0.0 {
        return Err(format!("{v} must be > 0"));
    }
    Ok(v)
}

/// A cooling factor in (0, 1) (clap value parser).
fn cooling(text: &str) -> Result<f64, String> {
    let v = kit::cli::parse_finite(text)?;
    if !(v > 0.0 && v < 1.0) {
        return Err(format!("{v} is not strictly between 0 and 1"));
    }
    Ok(v)
}

/// A patch aspect within 1/16 .. 16 (clap value parser).
fn aspect(text: &str) -> Result<f64, String> {
    let v = kit::cli::parse_finite(text)?;
    if !(1.0 / MAX_ASPECT..=MAX_ASPECT).contains(&v) {
        return Err(format!("{v} is not between 1/{MAX_ASPECT} and {MAX_ASPECT}"));
    }
    Ok(v)
}

/// Method parameters shared by `solve`, `build` and `demo`.
#[derive(Args, Clone, Debug)]
pub struct MethodArgs {
    /// Seed of the annealing's random moves
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// SoftAssign initial temperature, in units of the mean distance (> 0)
    #[arg(long, default_value_t = SoftAssignParams::default().t0, value_parser = positive)]
    pub t0: f64,
    /// SoftAssign cooling factor per cooling iteration, in (0, 1)
    #[arg(long, default_value_t = SoftAssignParams::default().cooling, value_parser = cooling)]
    pub cooling: f64,
    /// SoftAssign bias alpha (Eq. 9), in units of the mean distance
    #[arg(long, default_value_t = SoftAssignParams::default().alpha, allow_negative_numbers = true, value_parser = kit::cli::parse_finite)]
    pub alpha: f64,
    /// SoftAssign temperature cooling iterations (1-100000)
    #[arg(long, default_value_t = SoftAssignParams::default().iterations, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub iterations: u32,
    /// SoftAssign temperature stabilisation iterations per cooling iteration (1-10000)
    #[arg(long, default_value_t = SoftAssignParams::default().stabilisations, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub stabilisations: u32,
    /// SoftAssign Sinkhorn iterations per stabilisation iteration (1-10000)
    #[arg(long, default_value_t = SoftAssignParams::default().sinkhorn, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub sinkhorn: u32,
    /// Annealing temperature levels (1-100000)
    #[arg(long, default_value_t = AnnealParams::default().levels, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub anneal_levels: u32,
    /// Annealing cooling factor per level, in (0, 1)
    #[arg(long, default_value_t = AnnealParams::default().cooling, value_parser = cooling)]
    pub anneal_cooling: f64,
    /// Annealing moves per level, per patch (1-100000)
    #[arg(long, default_value_t = AnnealParams::default().moves_per_patch, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub anneal_moves: u32,
    /// The most patches one tile may fill (default 1: no repeated tiles; with --min-distance and no --repeat, as many as the spacing allows); every method honours it, and a grid of more than N x tiles patches is an error naming the smallest N that works
    #[arg(long, value_name = "N", value_parser = kit::cli::parse_count)]
    pub repeat: Option<usize>,
    /// The same tile never twice within D cells (Chebyshev distance: D columns and D rows either way), as metapixel's --distance; lets tiles repeat (no limit unless --repeat gives one); every method honours it, exact as a constrained assignment that reports whether it proved the optimum or its gap to a lower bound
    #[arg(long, value_name = "D", value_parser = kit::cli::parse_count)]
    pub min_distance: Option<usize>,
}

impl MethodArgs {
    pub fn options(&self, backend: Backend) -> SolveOptions {
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
            repeat: self.repeat(),
            spacing: None,
        }
    }

    /// `--repeat`, or its default: 1, and no limit with `--min-distance` (the spacing is the
    /// limit then).
    pub fn repeat(&self) -> usize {
        self.repeat.unwrap_or(if self.min_distance.is_some() { usize::MAX } else { 1 })
    }

    /// `--min-distance` on a grid of patches.
    pub fn spacing(&self, grid: Dims) -> Option<Spacing> {
        self.min_distance.map(|distance| Spacing::grid(grid.0, grid.1, distance))
    }
}

/// The help of `--method` and `--backend` together: which method runs where.
const METHOD_HELP: &str = "Assignment method. softassign runs on the GPU (--backend gpu) or the CPU reference (--backend cpu); exact runs on the GPU (the Hungarian method on square matrices of few whole-number levels, an auction otherwise; certified in f64) with --repeat 1 and otherwise on the CPU (shortest augmenting paths, all cores); greedy and anneal are sequential by nature and run on the CPU whatever --backend says (the JSON `backend` of solve, `solve_backend` of build, names where the solver ran). Which to pick (a 40x30 photo mosaic from 1200 tiles, 2-core CPU): exact for the best mosaic (optimal, 5.4 s; 0.5 s for 2048x8192 on an H200 GPU); greedy for a preview (8 ms, 1.18x the optimal cost); anneal is the paper's baseline (9.8 s, 1.0055x); softassign is the paper's method, for the GPU (on the CPU it was 20-200x slower than exact and a little worse); docs/cli.md has the figures";

#[derive(Args)]
pub struct SolveArgs {
    /// Distance matrix: float32 or float64 .npy of shape (m, n), m <= n x --repeat, entries finite, >= 0 and within float32's range
    #[arg(long, value_name = "D.npy")]
    pub distance: PathBuf,
    #[arg(long, value_enum, help = METHOD_HELP)]
    pub method: Method,
    /// The patches' grid, COLSxROWS (rows of D row-major over it); needed by --min-distance
    #[arg(long, value_name = "COLSxROWS")]
    pub grid: Option<Dims>,
    #[command(flatten)]
    pub params: MethodArgs,
    #[command(flatten)]
    pub common: kit::CommonArgs,
}

/// The mosaic problem: a target image cut into a grid of patches, and a tile folder.
#[derive(Args)]
pub struct ProblemArgs {
    /// Target image (PNG, JPEG, TIFF, WebP or BMP; EXIF orientation applied)
    #[arg(long)]
    pub target: PathBuf,
    /// Folder of tile images (searched recursively)
    #[arg(long)]
    pub tiles: PathBuf,
    /// Patch grid, COLSxROWS (each 1-65536; patches may not outnumber the tiles times --repeat); required unless --layout adaptive
    #[arg(long, value_name = "COLSxROWS", required_unless_present = "min_cell")]
    pub grid: Option<Dims>,
    /// grid: equal patches (--grid); adaptive: square cells of a quadtree, from --max-cell where the target is flat down to --min-cell where it has detail (each tile still used at most --repeat times, across every cell size)
    #[arg(long, value_enum, default_value_t = LayoutKind::Grid)]
    pub layout: LayoutKind,
    /// The smallest adaptive cell's side, in target pixels
    #[arg(long, value_name = "PX", value_parser = kit::cli::parse_count, required_if_eq("layout", "adaptive"))]
    pub min_cell: Option<usize>,
    /// The largest adaptive cell's side, in target pixels: --min-cell times a power of two
    #[arg(long, value_name = "PX", value_parser = kit::cli::parse_count, required_if_eq("layout", "adaptive"))]
    pub max_cell: Option<usize>,
    /// Feature cells per patch and tile, UxV (the grid of mean colours they are compared by)
    #[arg(long, value_name = "UxV", default_value = "4x4")]
    pub cells: Dims,
    /// How cells are compared: lab (default: Euclidean in CIELAB of each cell's mean colour), ciede2000 (the CIEDE2000 difference of each cell, slower, closer to what the eye sees) or rgb (the paper's Eq. 1 on mean sRGB values); a cell's differences are combined as the square root of their sum of squares
    #[arg(long, value_enum, default_value_t = Metric::default())]
    pub metric: Metric,
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// How the target is cut (`--layout`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutKind {
    Grid,
    Adaptive,
}

impl ProblemArgs {
    /// The layout the flags ask for; a usage error where they do not go together.
    pub fn layout(&self) -> anyhow::Result<CellLayout> {
        let usage = |text: &str| anyhow::Error::from(kit::Usage(text.into()));
        match (self.layout, self.grid, self.min_cell, self.max_cell) {
            (LayoutKind::Grid, Some(grid), None, None) => Ok(CellLayout::Grid(grid)),
            (LayoutKind::Grid, _, _, _) => Err(usage("--min-cell and --max-cell need --layout adaptive")),
            (LayoutKind::Adaptive, None, Some(min), Some(max)) => Ok(CellLayout::Adaptive(Sizes { min, max })),
            (LayoutKind::Adaptive, Some(_), _, _) => Err(usage(
                "--layout adaptive takes --min-cell and --max-cell, not --grid (--cells stays the feature grid)",
            )),
            (LayoutKind::Adaptive, None, _, _) => Err(usage("--layout adaptive needs --min-cell PX and --max-cell PX")),
        }
    }

    /// Measures the target's patches and indexes the tiles (warnings on stderr).
    pub fn prepare(&self) -> anyhow::Result<compose::Problem> {
        let cache_dir = self.cache.dir();
        let spec = compose::ProblemSpec {
            target: &self.target,
            tiles: &self.tiles,
            layout: self.layout()?,
            cells: self.cells,
            metric: self.metric,
            cache_dir: cache_dir.as_deref(),
        };
        Ok(compose::prepare(&spec, super::warn)?)
    }
}

/// Where the tile index cache lives: in the user's cache folder, never in the photo folder.
#[derive(Args)]
pub struct CacheArgs {
    /// Folder of the tile index cache (default: $XDG_CACHE_HOME/tessera, else ~/.cache/tessera)
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    pub cache: Option<PathBuf>,
    /// Index the tiles without reading or writing a cache
    #[arg(long)]
    pub no_cache: bool,
}

impl CacheArgs {
    /// The cache folder, `None` for no cache.
    pub fn dir(&self) -> Option<PathBuf> {
        if self.no_cache {
            return None;
        }
        self.cache.clone().or_else(mosaic::index::default_cache_dir)
    }
}

#[derive(Args)]
pub struct DistanceArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,
    /// Output .npy (float32, shape (m, n), rows = patches row-major over the grid)
    #[arg(long, value_name = "D.npy")]
    pub out: PathBuf,
    #[command(flatten)]
    pub common: kit::CommonArgs,
}

#[derive(Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,
    #[arg(long, value_enum, help = METHOD_HELP)]
    pub method: Method,
    /// Output image; the format follows the extension: .png, .jpg/.jpeg, .tif/.tiff, .bmp or .webp
    #[arg(long)]
    pub out: PathBuf,
    /// JPEG quality of a .jpg/.jpeg output (1-100)
    #[arg(long, default_value_t = 92, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub quality: u8,
    /// Width of one tile in the output, in pixels (1-4096; height follows the patch aspect): 100 with an 80-column grid makes an 8000 px wide poster
    #[arg(long, default_value_t = 32, value_parser = tile_px)]
    pub tile_px: usize,
    /// Colour transfer, 0-1: moves each tile's per-channel mean and deviation towards its cell's by this fraction (0: tiles as they are), so the mosaic reads as the target from afar
    #[arg(long, value_name = "A", default_value_t = 0.0, value_parser = kit::cli::parse_unit)]
    pub tint: f64,
    /// Also write the assignment as CSV: one line per cell, `col,row,tile` (the tile's path), written together with the image (both or neither)
    #[arg(long, value_name = "FILE.csv")]
    pub assignment: Option<PathBuf>,
    /// Also solve exactly (CPU) and report the cost relative to the optimum
    #[arg(long)]
    pub compare_exact: bool,
    #[command(flatten)]
    pub params: MethodArgs,
    #[command(flatten)]
    pub common: kit::CommonArgs,
}

fn tile_px(text: &str) -> Result<usize, String> {
    let v = kit::cli::parse_count(text)?;
    if v > 4096 {
        return Err(format!("{v} is more than 4096"));
    }
    Ok(v)
}

#[derive(Args)]
pub struct IndexArgs {
    /// Folder of tile images (searched recursively)
    pub dir: PathBuf,
    /// Feature cells, UxV
    #[arg(long, value_name = "UxV", default_value = "4x4")]
    pub cells: Dims,
    /// Patch aspect (width / height, 1/16 to 16) the tiles are cropped to
    #[arg(long, default_value_t = 1.0, value_parser = aspect)]
    pub aspect: f64,
    #[command(flatten)]
    pub cache: CacheArgs,
    /// Print one JSON object per line (docs/cli.md) instead of text; no progress bars
    #[arg(long)]
    pub json: bool,
    /// Memory budget for reading inputs, such as 512M or 8G (default: half of physical memory)
    #[arg(long, value_name = "SIZE", value_parser = kit::budget::parse_size)]
    pub max_memory: Option<u64>,
}

#[derive(Args)]
pub struct DemoArgs {
    /// Output folder (created if missing): target.png, mosaic_{exact,softassign,greedy}.png, summary.json
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub params: MethodArgs,
    #[command(flatten)]
    pub common: kit::CommonArgs,
}

#[derive(Args)]
pub struct BenchCmd {
    #[command(flatten)]
    pub bench: kit::BenchArgs,
    /// Only this size of patches x tiles (M <= N), repeatable: its cooling iteration with every
    /// kernel and shape, and its full solve with the default and the atomic kernel
    #[arg(long = "size", value_name = "MxN", value_parser = parse_bench_size)]
    pub sizes: Vec<(usize, usize)>,
    /// Leave the CPU out: no CPU SoftAssign timing, no greedy or annealing baseline, and the
    /// optimum from the GPU's certified exact solver
    #[arg(long)]
    pub skip_cpu: bool,
    /// Instead: the exact solvers (GPU exact, the GPU Hungarian method alone where it applies, CPU) on photo, uniform and integer cost matrices, each written to DIR as float32 .npy for other solvers to solve too (apps/mosaic/scripts/exact_costs.py); sizes from --size (default 2048x8192, 4096x16384, 4096x4096, 10000x10000)
    #[arg(long, value_name = "DIR")]
    pub costs: Option<PathBuf>,
}

/// `MxN` with 1 <= M <= N <= 16384 (every patch needs its own tile).
fn parse_bench_size(text: &str) -> Result<(usize, usize), String> {
    let (m, n) = kit::cli::parse_size(text)?;
    if m > n {
        return Err(format!("{text}: M patches need at least M tiles (N >= M)"));
    }
    Ok((m as usize, n as usize))
}
