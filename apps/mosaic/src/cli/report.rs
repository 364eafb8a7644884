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
    /// The tile of each patch.
    pub assignment: Vec<usize>,
    pub solve_ms: f64,
}

impl SolveReport {
    pub fn new(solved: &Solved, d: &DistanceMatrix) -> Self {
        SolveReport {
            method: solved.method,
            cost: solved.cost,
            patches: d.rows,
            tiles: d.cols,
            assignment: solved.assignment.clone(),
            solve_ms: solved.solve_ms,
        }
    }
}

impl fmt::Display for SolveReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: cost {:.6} for {} patches from {} tiles (each used at most once) in {:.1} ms",
            self.method.name(),
            self.cost,
            self.patches,
            self.tiles,
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
    pub tiles_used: usize,
    pub width: usize,
    pub height: usize,
    pub solve_ms: f64,
    pub render_ms: f64,
    pub index: IndexStats,
    /// In the envelope's `out` list.
    #[serde(skip)]
    pub out: PathBuf,
}

impl fmt::Display for BuildReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ratio = self.ratio_to_exact.map(|r| format!(" ({r:.4} x exact)")).unwrap_or_default();
        write!(
            f,
            "{}: {} patches from {} tiles, cost {:.1}{ratio}, solved in {:.1} ms; wrote {} ({}x{})",
            self.method.name(),
            self.patches,
            self.tiles,
            self.cost,
            self.solve_ms,
            self.out.display(),
            self.width,
            self.height
        )
    }
}

#[derive(Serialize)]
pub struct IndexReport {
    pub tiles: usize,
    pub stats: IndexStats,
    /// The cache file (`None` with --no-cache or no cache folder).
    pub cache: Option<PathBuf>,
    pub index_ms: f64,
}

impl fmt::Display for IndexReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} tiles indexed ({} from cache, {} decoded, {} skipped) in {:.1} ms",
            self.tiles, self.stats.from_cache, self.stats.decoded, self.stats.skipped, self.index_ms
        )?;
        match &self.cache {
            Some(cache) => write!(f, "; cache {}", cache.display()),
            None => write!(f, "; no cache"),
        }
    }
}
