//! The records `mosaic` prints: text through `Display`, or the JSON envelope under `--json`.

use std::fmt;
use std::path::PathBuf;

use kit::Backend;
use mosaic::index::IndexStats;
use mosaic::solve::{Method, Solved};
use mosaic::DistanceMatrix;
use serde::Serialize;

#[derive(Serialize)]
pub struct SolveReport {
    pub method: Method,
    pub cost: f64,
    pub patches: usize,
    pub tiles: usize,
    /// The most patches one tile may fill.
    pub repeat: usize,
    /// The tile of each patch.
    pub assignment: Vec<usize>,
    pub solve_ms: f64,
    /// The exact method's certificate: primal cost minus dual objective (null otherwise).
    pub duality_gap: Option<f64>,
}

impl SolveReport {
    pub fn new(solved: &Solved, d: &DistanceMatrix, repeat: usize) -> Self {
        SolveReport {
            method: solved.method,
            cost: solved.cost,
            patches: d.rows,
            tiles: d.cols,
            repeat,
            assignment: solved.assignment.clone(),
            solve_ms: solved.solve_ms,
            duality_gap: solved.duality_gap,
        }
    }
}

/// "each used at most once" / "each used at most 4 times".
fn uses(repeat: usize) -> String {
    match repeat {
        1 => "each used at most once".into(),
        n => format!("each used at most {n} times"),
    }
}

impl fmt::Display for SolveReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: cost {:.6} for {} patches from {} tiles ({}) in {:.1} ms",
            self.method.name(),
            self.cost,
            self.patches,
            self.tiles,
            uses(self.repeat),
            self.solve_ms
        )
    }
}

#[derive(Serialize)]
pub struct DistanceReport {
    pub patches: usize,
    pub tiles: usize,
    pub index: IndexStats,
    pub distance_ms: f64,
}

impl fmt::Display for DistanceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} patches x {} tiles in {:.1} ms", self.patches, self.tiles, self.distance_ms)
    }
}

#[derive(Serialize)]
pub struct BuildReport {
    pub method: Method,
    /// Where the solver ran (greedy, anneal and exact always on the CPU).
    pub solve_backend: Backend,
    pub cost: f64,
    pub ratio_to_exact: Option<f64>,
    pub patches: usize,
    pub tiles: usize,
    /// Distinct tiles in the mosaic.
    pub tiles_used: usize,
    pub width: usize,
    pub height: usize,
    /// The most patches one tile may fill.
    pub repeat: usize,
    /// The colour transfer's strength (0: tiles as they are).
    pub tint: f64,
    pub solve_ms: f64,
    pub render_ms: f64,
    pub index: IndexStats,
    /// The tile each cell shows, row-major (as in `--assignment`).
    pub cells: Vec<CellTile>,
    /// In the envelope's `out` list.
    #[serde(skip)]
    pub out: PathBuf,
}

impl fmt::Display for BuildReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ratio = self.ratio_to_exact.map(|r| format!(" ({r:.4} x exact)")).unwrap_or_default();
        write!(
            f,
            "{}: {} patches from {} tiles ({}), cost {:.1}{ratio}, solved in {:.1} ms; wrote {} ({}x{})",
            self.method.name(),
            self.patches,
            self.tiles,
            uses(self.repeat),
            self.cost,
            self.solve_ms,
            self.out.display(),
            self.width,
            self.height
        )
    }
}

/// One cell of the mosaic and the tile it shows.
#[derive(Serialize)]
pub struct CellTile {
    pub col: usize,
    pub row: usize,
    /// The tile's path: the tile folder as given, joined with its path inside it.
    pub tile: String,
}

#[derive(Serialize)]
pub struct IndexReport {
    pub tiles: usize,
    pub stats: IndexStats,
    /// The cache file (`None` with --no-cache, no cache folder, or a cache that could not
    /// be written).
    pub cache: Option<PathBuf>,
    pub index_ms: f64,
}

impl fmt::Display for IndexReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} tiles indexed ({} from cache, {} decoded on {} threads, {} skipped) in {:.1} ms",
            self.tiles,
            self.stats.from_cache,
            self.stats.decoded,
            self.stats.threads,
            self.stats.skipped,
            self.index_ms
        )?;
        match &self.cache {
            Some(cache) => write!(f, "; cache {}", cache.display()),
            None => write!(f, "; no cache"),
        }
    }
}
