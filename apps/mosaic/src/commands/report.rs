//! The records `mosaic` prints: text through `Display`, or the JSON envelope under `--json`.

use std::fmt;
use std::path::PathBuf;

use kit::Backend;
use mosaic::colour::Metric;
use mosaic::index::IndexStats;
use mosaic::matrix::effective_repeat;
use mosaic::solve::{Method, SolveOptions, Solved};
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
    /// `--min-distance` (null without).
    pub min_distance: Option<usize>,
    /// The exact method's certificate: cost minus the lower bound (null otherwise).
    pub duality_gap: Option<f64>,
    /// The exact method's lower bound on the optimum (null otherwise).
    pub lower_bound: Option<f64>,
    /// Whether the assignment is proved optimal (the exact method without --min-distance
    /// always; with it only when its bounds met).
    pub optimal: bool,
    /// The exact method's gap: (cost - lower_bound) / lower_bound, the most the cost may be
    /// above the optimum as a fraction of it (null otherwise).
    pub gap: Option<f64>,
}

impl SolveReport {
    pub fn new(solved: &Solved, d: &DistanceMatrix, options: &SolveOptions) -> Self {
        SolveReport {
            method: solved.method,
            cost: solved.cost,
            patches: d.rows,
            tiles: d.cols,
            repeat: effective_repeat(options.repeat, d.rows),
            assignment: solved.assignment.clone(),
            solve_ms: solved.solve_ms,
            min_distance: options.spacing.as_ref().map(|s| s.distance),
            duality_gap: solved.duality_gap,
            lower_bound: solved.lower_bound,
            optimal: solved.optimal,
            gap: gap(solved.cost, solved.lower_bound),
        }
    }
}

/// (cost - bound) / bound: 0 for a cost equal to its bound, none without a bound or with a
/// bound of 0 under a positive cost.
pub fn gap(cost: f64, lower_bound: Option<f64>) -> Option<f64> {
    let bound = lower_bound?;
    if cost <= bound {
        Some(0.0)
    } else if bound > 0.0 {
        Some((cost - bound) / bound)
    } else {
        None
    }
}

/// What the exact method proved under --min-distance, for the text summaries (nothing for
/// the other methods, or without the rule, where exact is always certified): that the
/// optimum is certified, or the most the cost may be above it.
fn proof(method: Method, min_distance: Option<usize>, optimal: bool, cost: f64, lower_bound: Option<f64>) -> String {
    match lower_bound {
        _ if method != Method::Exact || min_distance.is_none() => String::new(),
        Some(_) if optimal => "; proved optimal under --min-distance (it meets its lower bound)".into(),
        Some(bound) => match gap(cost, Some(bound)) {
            Some(g) => format!(
                "; not proved optimal under --min-distance: at most {:.3}% above the optimum (lower bound {bound:.6})",
                100.0 * g
            ),
            None => format!("; not proved optimal under --min-distance (lower bound {bound:.6})"),
        },
        None => String::new(),
    }
}

/// " at least D+1 cells apart" under --min-distance.
fn apart(min_distance: Option<usize>) -> String {
    min_distance.map(|d| format!(", the same tile at least {} cells apart", d + 1)).unwrap_or_default()
}

/// "each used at most once" / "each used at most 4 times" / "repeats unlimited" (a repeat
/// as large as the patches' count).
fn uses(repeat: usize, patches: usize) -> String {
    match repeat {
        1 => "each used at most once".into(),
        n if n >= patches => "repeats unlimited".into(),
        n => format!("each used at most {n} times"),
    }
}

impl fmt::Display for SolveReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: cost {:.6} for {} patches from {} tiles ({}{}) in {:.1} ms{}",
            self.method.name(),
            self.cost,
            self.patches,
            self.tiles,
            uses(self.repeat, self.patches),
            apart(self.min_distance),
            self.solve_ms,
            proof(self.method, self.min_distance, self.optimal, self.cost, self.lower_bound)
        )
    }
}

#[derive(Serialize)]
pub struct DistanceReport {
    /// How the cells were compared (`--metric`).
    pub metric: Metric,
    pub patches: usize,
    pub tiles: usize,
    pub index: IndexStats,
    pub distance_ms: f64,
}

impl fmt::Display for DistanceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} patches x {} tiles ({}) in {:.1} ms",
            self.patches,
            self.tiles,
            self.metric.name(),
            self.distance_ms
        )
    }
}

#[derive(Serialize)]
pub struct BuildReport {
    pub method: Method,
    /// How the cells were compared (`--metric`).
    pub metric: Metric,
    /// Where each step ran: the distances and the render on `--backend`, the solver where the
    /// method runs (greedy and anneal on the CPU, exact on the CPU with `--repeat` above 1).
    pub distance_backend: Backend,
    pub solve_backend: Backend,
    pub render_backend: Backend,
    pub cost: f64,
    /// The cost over the optimum's (`--compare-exact`, or 1 for the exact method); null when
    /// the optimum costs 0 and this cost does not.
    pub ratio_to_exact: Option<f64>,
    pub patches: usize,
    pub tiles: usize,
    /// Distinct tiles in the mosaic.
    pub tiles_used: usize,
    pub width: usize,
    pub height: usize,
    /// The most patches one tile may fill.
    pub repeat: usize,
    /// `--min-distance` (null without).
    pub min_distance: Option<usize>,
    /// The exact method's lower bound on the optimum (null otherwise).
    pub lower_bound: Option<f64>,
    /// Whether the assignment is proved optimal.
    pub optimal: bool,
    /// The exact method's gap: (cost - lower_bound) / lower_bound, the most the cost may be
    /// above the optimum as a fraction of it (null otherwise).
    pub gap: Option<f64>,
    /// The colour transfer's strength (0: tiles as they are).
    pub tint: f64,
    pub solve_ms: f64,
    pub render_ms: f64,
    pub index: IndexStats,
    /// The cost against the free optimum, the library used and a repeat that keeps likeness.
    pub likeness: mosaic::likeness::Likeness,
    /// The optimum's cost where it was computed (in the text; the JSON has `ratio_to_exact`).
    #[serde(skip)]
    pub exact_cost: Option<f64>,
    /// In the envelope's `out` list.
    #[serde(skip)]
    pub out: PathBuf,
}

impl fmt::Display for BuildReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ratio = match (self.ratio_to_exact, self.exact_cost) {
            (_, Some(e)) if e == self.cost && self.method == Method::Exact => String::new(),
            (Some(r), _) => format!(" ({r:.4} x exact)"),
            (None, Some(e)) => format!(" (exact {e:.1})"),
            (None, None) => String::new(),
        };
        write!(
            f,
            "{}: {} patches from {} tiles ({}{}), cost {:.1}{ratio}, solved in {:.1} ms{}; wrote {} ({}x{})",
            self.method.name(),
            self.patches,
            self.tiles,
            uses(self.repeat, self.patches),
            apart(self.min_distance),
            self.cost,
            self.solve_ms,
            proof(self.method, self.min_distance, self.optimal, self.cost, self.lower_bound),
            self.out.display(),
            self.width,
            self.height
        )
    }
}

/// One cell of the mosaic and the tile it shows (a line of `--assignment`).
pub struct CellTile {
    pub col: usize,
    pub row: usize,
    /// x, y, w, h in target pixels.
    pub rect: mosaic::compose::Rect,
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

/// `cost` over the optimum's `exact`: 1 when they are equal (0 over 0 included), none when
/// only the optimum is 0.
pub fn ratio_to_exact(cost: f64, exact: f64) -> Option<f64> {
    if cost == exact {
        Some(1.0)
    } else if exact > 0.0 {
        Some(cost / exact)
    } else {
        None
    }
}
