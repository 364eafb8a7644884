//! From the auction's f32 prices to a proven optimum in f64.
//!
//! Potentials: with lambda the lowest price of an assigned column, v[j] = C (lambda - p[j])
//! (<= 0) on assigned columns and v[j] = 0 on the others (held by the implicit dummy rows of
//! the square problem), u[i] = min_j d[i][j] - v[j]. These are dual feasible by
//! construction. An epsilon-optimal auction leaves most rows up to C eps above their
//! minimum, so every row whose column does not attain it exactly is released, then each is
//! re-inserted by a shortest augmenting path ([`super::augment`]): short ones, since the
//! released columns are free and near every row's minimum.
//! Then every edge of the assignment is tight, the potentials are shifted back to the
//! rectangular dual (v <= 0, v = 0 on unused columns), and the certificate is checked
//! over every entry in f64.

use rayon::prelude::*;

use super::augment::{Augmenter, DUMMY};
use super::{AuctionState, NONE};
use crate::error::{MosaicError, Result};
use crate::exact;
use crate::matrix::DistanceMatrix;

/// Relative tolerance of the certificate (in units of D's largest entry): rounding of the
/// f64 potential updates along augmenting paths.
const TOLERANCE: f64 = 1e-9;

/// A certified optimal assignment.
#[derive(Clone, Debug)]
pub struct Certified {
    pub assignment: Vec<usize>,
    /// Primal cost minus dual objective.
    pub gap: f64,
    /// Rows re-inserted by shortest augmenting paths.
    pub repaired_rows: usize,
    /// Whether the certificate of the repair failed and the CPU exact solver ran instead
    /// (never seen; a bug if it happens).
    pub fallback: bool,
}

/// The square problem's start from the prices: v[j] = C (lambda - p[j]) on assigned columns,
/// 0 on the others, which the dummies hold (u_dummy = 0); u[i] = min_j d[i][j] - v[j].
fn warm_start<'a>(d: &'a DistanceMatrix, state: &AuctionState, scale: f64) -> Augmenter<'a> {
    let (m, n) = (d.rows, d.cols);
    let mut row4col = vec![usize::MAX; n];
    for (i, &j) in state.col4row.iter().enumerate().filter(|(_, &j)| j != NONE) {
        row4col[j as usize] = i;
    }
    let lambda = (0..n).filter(|&j| row4col[j] < m).map(|j| state.prices[j] as f64).fold(f64::INFINITY, f64::min);
    let v: Vec<f64> =
        (0..n).map(|j| if row4col[j] < m { scale * (lambda - state.prices[j] as f64) } else { 0.0 }).collect();
    let u: Vec<f64> = (0..m)
        .into_par_iter()
        .map(|i| d.row(i).iter().zip(&v).map(|(&x, &vj)| x - vj).fold(f64::INFINITY, f64::min))
        .collect();
    // n - m dummies take unassigned columns; any left over (rows the auction did not
    // assign) stay free.
    let mut dummies = n - m;
    for holder in row4col.iter_mut().filter(|r| **r == usize::MAX) {
        if dummies == 0 {
            break;
        }
        *holder = DUMMY;
        dummies -= 1;
    }
    Augmenter::new(d, u, 0.0, v, row4col)
}

/// An assignment with its potentials (u per row, v per column).
pub struct Potentials {
    pub assignment: Vec<usize>,
    pub u: Vec<f64>,
    pub v: Vec<f64>,
}

/// Checks the LP certificate of `s` in f64 over every entry, within `tol` (absolute):
/// reduced costs d - u - v >= 0, = 0 on the assignment, v <= 0, v = 0 on unused columns.
/// Returns the duality gap. Parallel over rows (the test of exact.rs's `certify`).
pub fn check(d: &DistanceMatrix, s: &Potentials, tol: f64) -> std::result::Result<f64, String> {
    let mut used = vec![false; d.cols];
    for (i, &j) in s.assignment.iter().enumerate() {
        if j >= d.cols || std::mem::replace(&mut used[j], true) {
            return Err(format!("row {i} has column {j}, out of range or taken"));
        }
    }
    if s.assignment.len() != d.rows {
        return Err(format!("{} rows assigned of {}", s.assignment.len(), d.rows));
    }
    if let Some(j) = (0..d.cols).find(|&j| s.v[j] > tol || (!used[j] && s.v[j] < -tol)) {
        return Err(format!("column potential {} at {j} (used: {})", s.v[j], used[j]));
    }
    let worst = (0..d.rows)
        .into_par_iter()
        .map(|i| {
            let ui = s.u[i];
            let lowest = d.row(i).iter().zip(&s.v).map(|(&x, &vj)| x - ui - vj).fold(f64::INFINITY, f64::min);
            let own = (d.at(i, s.assignment[i]) - ui - s.v[s.assignment[i]]).abs();
            (i, lowest.min(-own))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("at least one row");
    if worst.1 < -tol {
        return Err(format!("row {}: reduced cost {} (negative, or non-zero on its column)", worst.0, worst.1));
    }
    let dual: f64 = s.u.iter().sum::<f64>() + s.v.iter().sum::<f64>();
    Ok(d.cost(&s.assignment) - dual)
}

/// Turns the auction's result into a certified optimum (see the module's documentation).
/// Should the certificate ever fail (a bug, not an input), the CPU exact solver runs from
/// scratch, and its certificate is checked the same way.
pub fn certify_or_repair(d: &DistanceMatrix, state: &AuctionState, scale: f64) -> Result<Certified> {
    let mut aug = warm_start(d, state, scale);
    // All slack rows leave first: re-inserting one while others still hold columns they
    // do not want would make their zero-cost edges into long chains for Dijkstra to walk.
    let slack: Vec<usize> = (0..d.rows)
        .filter(|&i| {
            let j = aug.col4row[i];
            j == usize::MAX || d.at(i, j) - aug.v[j] > aug.u[i]
        })
        .collect();
    for &i in &slack {
        aug.release(i);
    }
    for &i in &slack {
        aug.reinsert(i);
    }
    let repaired_rows = slack.len();
    // Back to the rectangular dual: shift by the largest column potential (that of every
    // unused column), so v <= 0 with v = 0 where no row is.
    let top = aug.v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let solution = Potentials {
        assignment: aug.col4row,
        u: aug.u.iter().map(|&u| u + top).collect(),
        v: aug.v.iter().map(|&v| v - top).collect(),
    };
    let tol = TOLERANCE * scale;
    let (solution, gap, fallback) = match check(d, &solution, tol) {
        Ok(gap) => (solution, gap, false),
        Err(_) => {
            let exact = exact::solve_with_duals(d, &indicatif::ProgressBar::hidden());
            let solution = Potentials { assignment: exact.assignment, u: exact.u, v: exact.v };
            let gap = check(d, &solution, tol)
                .map_err(|e| MosaicError::InvalidInput(format!("the exact solver's certificate failed: {e}")))?;
            (solution, gap, true)
        }
    };
    Ok(Certified { assignment: solution.assignment, gap, repaired_rows, fallback })
}
