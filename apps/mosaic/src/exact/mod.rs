//! The exact optimum: shortest augmenting paths (the Jonker-Volgenant family) for the
//! rectangular assignment problem (m <= n x repeat), in f64, certified.
//!
//! Rows are added one at a time; each addition runs Dijkstra over reduced costs
//! d[i][j] - u[i] - v[j] (never negative) until it reaches a column with a use left, then
//! updates the potentials and flips the path ([`state::State::augment`]). The final
//! potentials are an LP dual certificate: u[i] + v[j] <= d[i][j] everywhere, with equality
//! on the assignment, v <= 0 and v[j] = 0 on unused columns, so the assignment is provably
//! optimal (see [`Solution::certify`]).
//!
//! Two searches share that state, and the solver picks per search:
//! - [`lazy`]: a heap, each row relaxing only its cheapest columns (its list grows when a
//!   search needs more). It reads a few dozen entries per row reached, which wins while the
//!   searches are short: wide matrices, and the first rows of any.
//! - [`dense`]: one pass over every column per row reached, no heap (LAPJV's and scipy's
//!   search). It wins once the searches reach a large share of the rows with most of their
//!   columns, as the last patches of a square photomosaic do, competing for every tile.
//!
//! The solver starts lazy and turns dense for good once a lazy search costs more than a
//! dense one would have (entries read and heap events, against rows reached x n).
//! On a square problem with each tile used once, Jonker and Volgenant's initialisation
//! ([`reduce`]: column reduction, reduction transfer, augmenting row reduction) assigns
//! most rows before any search.
//!
//! With `--repeat N` a tile is one node of capacity N (the transportation problem): it is a
//! sink while it has a use left, and reaching a full tile reaches every row on it. One
//! potential per tile; the certificate is checked over [`Slots`] (tile j's uses as slots j,
//! n + j, ... sharing v[j]), where it is the plain assignment certificate. The first lists
//! and the initialisation's reductions run on all cores; the searches are sequential and
//! deterministic.

mod dense;
mod lazy;
mod reduce;
mod state;
#[cfg(test)]
mod tests;

use indicatif::ProgressBar;

use crate::matrix::{DistanceMatrix, Slots};
use dense::Dense;
use lazy::Lazy;
use state::State;

const NONE: usize = usize::MAX;

/// How fast the adaptive choice forgets a search's work (per search): about the last 8
/// searches count, so one long search among short ones does not turn the solver dense.
const DECAY: f64 = 0.875;

/// An optimal assignment with its dual potentials.
#[derive(Clone, Debug)]
pub struct Solution {
    /// The tile of each patch.
    pub assignment: Vec<usize>,
    /// The slot of each patch ([`Slots`]: slot s is a use of tile s mod n).
    pub slots: Vec<usize>,
    /// Row potentials.
    pub u: Vec<f64>,
    /// Slot potentials (<= 0; 0 on unused slots).
    pub v: Vec<f64>,
    /// Uses allowed per tile (the effective repeat: at most one per patch).
    pub repeat: usize,
}

/// Solves the assignment problem exactly; `progress` advances once per row assigned.
pub fn solve(d: &DistanceMatrix, progress: &ProgressBar) -> Vec<usize> {
    solve_with_duals(d, progress).assignment
}

/// Solves exactly (each tile at most once) and keeps the dual potentials.
pub fn solve_with_duals(d: &DistanceMatrix, progress: &ProgressBar) -> Solution {
    solve_repeat(d, 1, progress)
}

/// Solves exactly with each tile used at most `repeat` times (the caller has checked that
/// m <= n x repeat).
pub fn solve_repeat(d: &DistanceMatrix, repeat: usize, progress: &ProgressBar) -> Solution {
    solve_with(d, repeat, Plan::default(), progress)
}

/// How [`solve_with`] runs.
#[derive(Clone, Copy, Debug)]
struct Plan {
    /// Jonker and Volgenant's initialisation first (each tile once only).
    initialise: bool,
    /// The cheapest columns each row lists at first (lazy searches).
    first_list: usize,
    /// Lazy searches before the solver turns dense regardless (0: dense throughout).
    dense_after: usize,
    /// Whether the solver turns dense as soon as a lazy search costs more than a dense one.
    adaptive: bool,
}

impl Default for Plan {
    fn default() -> Self {
        Plan { initialise: true, first_list: lazy::FIRST_LIST, dense_after: usize::MAX, adaptive: true }
    }
}

fn solve_with(d: &DistanceMatrix, repeat: usize, plan: Plan, progress: &ProgressBar) -> Solution {
    let mut st = State::new(d, repeat);
    let free = if plan.initialise && st.capacity == 1 && d.rows == d.cols && d.cols > 1 {
        reduce::initialise(&mut st)
    } else {
        (0..d.rows).collect()
    };
    progress.inc((d.rows - free.len()) as u64);
    let mut lazy = (plan.dense_after > 0).then(|| Lazy::new(d, plan.first_list));
    let mut dense = None;
    // Recent lazy work against what dense searches would have read (decaying sums).
    let (mut lazy_work, mut dense_work) = (0.0f64, 0.0f64);
    for (k, row) in free.into_iter().enumerate() {
        if k == plan.dense_after {
            lazy = None;
        }
        match &mut lazy {
            Some(search) => {
                search.insert(&mut st, row);
                lazy_work = lazy_work * DECAY + search.work as f64;
                dense_work = dense_work * DECAY + (search.rows_reached * d.cols) as f64;
                if plan.adaptive && lazy_work > dense_work {
                    lazy = None;
                }
            }
            None => dense.get_or_insert_with(|| Dense::new(d.cols)).insert(&mut st, row),
        }
        progress.inc(1);
    }
    st.into_solution()
}

impl Solution {
    /// Checks the dual certificate within `tol` (absolute, in units of D): reduced costs
    /// non-negative, zero on the assignment, v <= 0 and v = 0 on unused columns. Returns the
    /// duality gap (primal cost minus dual objective), which is ~0 for an optimum.
    pub fn certify(&self, d: &DistanceMatrix, tol: f64) -> Result<f64, String> {
        let slots = Slots::new(d, self.repeat);
        let mut used = vec![false; slots.count];
        for (i, &j) in self.slots.iter().enumerate() {
            used[j] = true;
            if slots.tile(j) != self.assignment[i] {
                return Err(format!("patch {i} has slot {j} but tile {}", self.assignment[i]));
            }
            let r = slots.at(i, j) - self.u[i] - self.v[j];
            if r.abs() > tol {
                return Err(format!("reduced cost {r} on assigned ({i}, slot {j})"));
            }
        }
        for i in 0..d.rows {
            for j in 0..slots.count {
                let r = slots.at(i, j) - self.u[i] - self.v[j];
                if r < -tol {
                    return Err(format!("negative reduced cost {r} at ({i}, slot {j})"));
                }
            }
        }
        for (j, &vj) in self.v.iter().enumerate() {
            if vj > tol || (!used[j] && vj.abs() > tol) {
                return Err(format!("column potential {vj} at {j} (used: {})", used[j]));
            }
        }
        let dual: f64 = self.u.iter().sum::<f64>() + self.v.iter().sum::<f64>();
        Ok(d.cost(&self.assignment) - dual)
    }
}
