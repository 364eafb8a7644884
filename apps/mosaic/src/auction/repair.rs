//! From the auction's f32 prices to a proven optimum in f64.
//!
//! Potentials: with lambda the lowest price of an assigned column, v[j] = C (lambda - p[j])
//! (<= 0) on assigned columns and v[j] = 0 on the others (held by the implicit dummy rows of
//! the square problem), u[i] = min_j d[i][j] - v[j]. These are dual feasible by
//! construction. The auction leaves most rows up to C eps above their minimum (a winning
//! bid makes its row eps worse off than its second best), so first each such row's column
//! is made cheaper (v raised) as far as every row and the dummies allow: where that brings
//! the row down to its minimum, it is tight with nothing else changed. Every row still not
//! at its minimum is released, then re-inserted by a shortest augmenting path
//! ([`super::augment`]): short ones, since the auction's end state is eps-optimal for the
//! rectangular problem (no unassigned column is cheaper than lambda).
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

/// u[i] = min_j d[i][j] - v[j], the largest row potentials that v allows.
fn row_potentials(d: &DistanceMatrix, v: &[f64]) -> Vec<f64> {
    (0..d.rows).into_par_iter().map(|i| lowest_reduced_cost(d.row(i), v, 0.0)).collect()
}

/// Whether assigned row `i` is above its minimum u[i] on its column (or unassigned).
fn slack(d: &DistanceMatrix, u: &[f64], v: &[f64], col4row: &[usize], i: usize) -> bool {
    let j = col4row[i];
    j == usize::MAX || d.at(i, j) - v[j] > u[i]
}

/// Raises v on the columns of the slack rows to the most that every real row (through u)
/// and every dummy (v <= 0) allows: min(0, min_i d[i][j] - u[i]). One pass over D in row
/// order, gathering those columns only.
fn tighten(d: &DistanceMatrix, u: &[f64], v: &mut [f64], columns: &[usize]) {
    let caps = (0..d.rows)
        .into_par_iter()
        .fold(
            || vec![0.0f64; columns.len()],
            |mut caps, i| {
                let row = d.row(i);
                for (cap, &j) in caps.iter_mut().zip(columns) {
                    *cap = cap.min(row[j] - u[i]);
                }
                caps
            },
        )
        .reduce_with(|mut a, b| {
            a.iter_mut().zip(b).for_each(|(x, y)| *x = x.min(y));
            a
        });
    for (cap, &j) in caps.into_iter().flatten().zip(columns) {
        v[j] = v[j].max(cap);
    }
}

/// The square problem's start from the prices: v[j] = C (lambda - p[j]) on assigned columns,
/// 0 on the others, which the dummies hold (u_dummy = 0), with the columns of slack rows
/// tightened; u[i] = min_j d[i][j] - v[j].
fn warm_start<'a>(d: &'a DistanceMatrix, state: &AuctionState, scale: f64) -> Augmenter<'a> {
    let (m, n) = (d.rows, d.cols);
    let mut row4col = vec![usize::MAX; n];
    let mut col4row = vec![usize::MAX; m];
    for (i, &j) in state.col4row.iter().enumerate().filter(|(_, &j)| j != NONE) {
        row4col[j as usize] = i;
        col4row[i] = j as usize;
    }
    let lambda = (0..n).filter(|&j| row4col[j] < m).map(|j| state.prices[j] as f64).fold(f64::INFINITY, f64::min);
    let mut v: Vec<f64> =
        (0..n).map(|j| if row4col[j] < m { scale * (lambda - state.prices[j] as f64) } else { 0.0 }).collect();
    let u = row_potentials(d, &v);
    let columns: Vec<usize> =
        (0..m).filter(|&i| col4row[i] != usize::MAX && slack(d, &u, &v, &col4row, i)).map(|i| col4row[i]).collect();
    tighten(d, &u, &mut v, &columns);
    // Recomputed rather than kept: rounding in the caps may move a minimum by an ulp.
    let u = row_potentials(d, &v);
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

/// The least x - u - v[j] over a row: in eight lanes, each a compare and select (which
/// vectorises, where `f64::min`'s NaN rule does not), since the check reads every entry.
fn lowest_reduced_cost(row: &[f64], v: &[f64], u: f64) -> f64 {
    let mut lanes = [f64::INFINITY; 8];
    let (rows, vs) = (row.chunks_exact(8), v.chunks_exact(8));
    let tail = rows.remainder().iter().zip(vs.remainder()).map(|(&x, &vj)| x - u - vj);
    for (x, w) in rows.zip(vs) {
        for k in 0..8 {
            let r = x[k] - u - w[k];
            lanes[k] = if r < lanes[k] { r } else { lanes[k] };
        }
    }
    lanes.into_iter().chain(tail).fold(f64::INFINITY, f64::min)
}

/// Checks the LP certificate of `s` in f64 over every entry, within `tol` (absolute):
/// reduced costs d - u - v >= 0, = 0 on the assignment, v <= 0, v = 0 on unused columns.
/// Returns the duality gap. Parallel over rows (the test of `exact::Solution::certify`).
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
            let lowest = lowest_reduced_cost(d.row(i), &s.v, ui);
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
    let released: Vec<usize> = (0..d.rows).filter(|&i| slack(d, &aug.u, &aug.v, &aug.col4row, i)).collect();
    for &i in &released {
        aug.release(i);
    }
    for &i in &released {
        aug.reinsert(i);
    }
    let repaired_rows = released.len();
    // Back to the rectangular dual: shift by the largest column potential (that of every
    // unused column), so v <= 0 with v = 0 where no row is.
    let top = aug.v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let solution = Potentials {
        assignment: aug.col4row,
        u: aug.u.iter().map(|&u| u + top).collect(),
        v: aug.v.iter().map(|&v| v - top).collect(),
    };
    let (solution, gap, fallback) = checked_or_exact(d, solution, TOLERANCE * scale)?;
    Ok(Certified { assignment: solution.assignment, gap, repaired_rows, fallback })
}

/// `solution` with its duality gap if its certificate holds within `tol` ([`check`]);
/// should it ever fail (a GPU solver's bug, not an input), the CPU exact solver's
/// solution, checked the same way. The flag says whether the CPU solver ran.
pub fn checked_or_exact(d: &DistanceMatrix, solution: Potentials, tol: f64) -> Result<(Potentials, f64, bool)> {
    if let Ok(gap) = check(d, &solution, tol) {
        return Ok((solution, gap, false));
    }
    let exact = exact::solve_with_duals(d, &indicatif::ProgressBar::hidden());
    let solution = Potentials { assignment: exact.assignment, u: exact.u, v: exact.v };
    let gap = check(d, &solution, tol)
        .map_err(|e| MosaicError::InvalidInput(format!("the exact solver's certificate failed: {e}")))?;
    Ok((solution, gap, true))
}
