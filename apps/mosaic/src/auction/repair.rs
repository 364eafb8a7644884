//! From the auction's f32 prices to a proven optimum in f64.
//!
//! Potentials: with lambda the lowest price of an assigned column, v[j] = C (lambda - p[j])
//! (<= 0) on assigned columns and v[j] = 0 on the others, u[i] = min_j d[i][j] - v[j]. These
//! are dual feasible by construction; a row whose column attains its minimum exactly is
//! kept, any other row is freed. Freeing a row frees its column, whose v must then be 0 (a
//! free column with v < 0 breaks complementary slackness): raising it lowers the u of every
//! row that now prefers it, which frees those rows in turn, until nothing changes. What is
//! left meets the invariants of [`Augmenter`], which re-inserts the freed rows by shortest
//! augmenting paths (JV, [`super::augment`]). The final potentials are then checked over every entry.

use rayon::prelude::*;

use super::{AuctionState, NONE};
use crate::error::{MosaicError, Result};
use super::augment::Augmenter;
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
}

/// Potentials from the prices and the rows whose column is exactly their cheapest; returns
/// (u, v, col4row with freed rows unassigned, freed rows).
fn warm_start(d: &DistanceMatrix, state: &AuctionState, scale: f64) -> (Vec<f64>, Vec<f64>, Vec<usize>, Vec<usize>) {
    let (m, n) = (d.rows, d.cols);
    let mut col4row: Vec<usize> = state.col4row.iter().map(|&j| if j == NONE { usize::MAX } else { j as usize }).collect();
    let mut owned = vec![false; n];
    for &j in col4row.iter().filter(|&&j| j != usize::MAX) {
        owned[j] = true;
    }
    let lambda = (0..n).filter(|&j| owned[j]).map(|j| state.prices[j] as f64).fold(f64::INFINITY, f64::min);
    let mut v: Vec<f64> =
        (0..n).map(|j| if owned[j] { scale * (lambda - state.prices[j] as f64) } else { 0.0 }).collect();
    let mut u: Vec<f64> = (0..m)
        .into_par_iter()
        .map(|i| d.row(i).iter().zip(&v).map(|(&x, &vj)| x - vj).fold(f64::INFINITY, f64::min))
        .collect();
    let mut freed_rows: Vec<usize> = Vec::new();
    let mut freed_cols: Vec<usize> = Vec::new();
    for i in 0..m {
        let j = col4row[i];
        if j == usize::MAX || d.at(i, j) - v[j] > u[i] {
            freed_rows.push(i);
            if j != usize::MAX {
                freed_cols.push(j);
            }
            col4row[i] = usize::MAX;
        }
    }
    while let Some(j) = freed_cols.pop() {
        if v[j] == 0.0 {
            continue;
        }
        v[j] = 0.0;
        for i in 0..m {
            let k = col4row[i];
            if k != usize::MAX && d.at(i, j) < u[i] {
                u[i] = d.at(i, j);
                col4row[i] = usize::MAX;
                freed_rows.push(i);
                freed_cols.push(k);
            }
        }
    }
    for &i in &freed_rows {
        u[i] = 0.0;
    }
    freed_rows.sort_unstable();
    (u, v, col4row, freed_rows)
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
    let (u, v, col4row, freed) = warm_start(d, state, scale);
    let mut aug = Augmenter::new(d, u, v, col4row);
    for &i in &freed {
        aug.insert(i);
    }
    let solution = Potentials { assignment: aug.col4row, u: aug.u, v: aug.v };
    let tol = TOLERANCE * scale;
    let (solution, gap) = match check(d, &solution, tol) {
        Ok(gap) => (solution, gap),
        Err(_) => {
            let exact = exact::solve_with_duals(d, &indicatif::ProgressBar::hidden());
            let solution = Potentials { assignment: exact.assignment, u: exact.u, v: exact.v };
            let gap = check(d, &solution, tol)
                .map_err(|e| MosaicError::InvalidInput(format!("the exact solver's certificate failed: {e}")))?;
            (solution, gap)
        }
    };
    Ok(Certified { assignment: solution.assignment, gap, repaired_rows: freed.len() })
}
