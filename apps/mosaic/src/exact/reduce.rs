//! Jonker and Volgenant's initialisation of a square problem (each tile once): most rows
//! assigned before any search, with potentials the searches continue from. (On a wide
//! matrix the lazy searches assign most rows as cheaply, and the bids below turn into price
//! wars: measured slower there.)
//!
//! - Column reduction (every column ends up used, so its potential may have either sign):
//!   v[j] = min_i d[i][j], and each column's cheapest row takes it if still free.
//! - Reduction transfer: a row that was the cheapest of one column only gives its slack to
//!   that column (v[j] drops to make the row's second best as cheap).
//! - Augmenting row reduction: each free row takes the column of its smallest reduced cost,
//!   lowered to its second smallest (as an auction bid of eps 0); the row it displaces is
//!   free again.
//!
//! Throughout, every assigned row is at the minimum of its reduced row d[i][j] - v[j], so
//! u[i] = d[i][col] - v[col] is feasible and tight. At the end v is shifted to <= 0 (a
//! square problem's duals are free up to a constant) and u is set from it.

use rayon::prelude::*;

use super::state::State;
use super::NONE;

/// Steps of augmenting row reduction per row at most (each step one pass over a row): a
/// bid can be as small as a rounding error, so a price war among rows wanting the same
/// column is cut short and left to the searches.
const STEPS_PER_ROW: usize = 4;

/// Initialises `st` (square, at least 2 x 2, no row assigned, capacity 1) and returns the
/// rows left free.
pub fn initialise(st: &mut State) -> Vec<usize> {
    debug_assert!(st.capacity == 1 && st.d.rows == st.d.cols && st.d.cols > 1);
    let free = column_reduction(st);
    let free = augmenting_row_reduction(st, free);
    let shift = st.v.iter().copied().fold(f64::NEG_INFINITY, f64::max).max(0.0);
    st.v.iter_mut().for_each(|v| *v -= shift);
    for i in 0..st.d.rows {
        let j = st.col4row[i];
        st.u[i] = if j == NONE { 0.0 } else { st.d.at(i, j) - st.v[j] };
    }
    free
}

fn assign(st: &mut State, i: usize, j: usize) {
    st.col4row[i] = j;
    st.rows_of[j] = vec![i];
}

/// Column reduction and reduction transfer; returns the free rows.
fn column_reduction(st: &mut State) -> Vec<usize> {
    let d = st.d;
    let (m, n) = (d.rows, d.cols);
    // Each column's minimum and its first row, over row blocks on all cores.
    let lowest = (0..m)
        .into_par_iter()
        .fold(
            || vec![(f64::INFINITY, NONE); n],
            |mut acc, i| {
                for (a, &x) in acc.iter_mut().zip(d.row(i)) {
                    if x < a.0 {
                        *a = (x, i);
                    }
                }
                acc
            },
        )
        .reduce_with(|mut a, b| {
            for (x, y) in a.iter_mut().zip(b) {
                if y.0 < x.0 || (y.0 == x.0 && y.1 < x.1) {
                    *x = y;
                }
            }
            a
        })
        .expect("a matrix has rows");
    let mut matches = vec![0usize; m];
    for j in (0..n).rev() {
        let (x, i) = lowest[j];
        st.v[j] = x;
        matches[i] += 1;
        if matches[i] == 1 {
            assign(st, i, j);
        }
    }
    let transfers: Vec<(usize, f64)> = (0..m)
        .into_par_iter()
        .filter(|&i| matches[i] == 1)
        .map(|i| {
            let j1 = st.col4row[i];
            let row = d.row(i);
            let second = (0..n).filter(|&j| j != j1).map(|j| row[j] - st.v[j]).fold(f64::INFINITY, f64::min);
            (j1, second)
        })
        .collect();
    for (j1, second) in transfers {
        st.v[j1] -= second;
    }
    (0..m).filter(|&i| matches[i] == 0).collect()
}

/// The smallest and second smallest d[i][j] - v[j] over j, with their columns (ties: the
/// first column).
fn two_lowest(row: &[f64], v: &[f64]) -> (f64, usize, f64, usize) {
    let (mut u1, mut j1, mut u2, mut j2) = (f64::INFINITY, NONE, f64::INFINITY, NONE);
    for (j, (&x, &vj)) in row.iter().zip(v).enumerate() {
        let h = x - vj;
        if h < u2 {
            if h >= u1 {
                (u2, j2) = (h, j);
            } else {
                (u2, j2, u1, j1) = (u1, j1, h, j);
            }
        }
    }
    (u1, j1, u2, j2)
}

/// Two rounds of augmenting row reduction over the free rows (within [`STEPS_PER_ROW`]);
/// returns the rows left free.
fn augmenting_row_reduction(st: &mut State, mut free: Vec<usize>) -> Vec<usize> {
    let mut steps = STEPS_PER_ROW * st.d.rows;
    for _ in 0..2 {
        let mut next = Vec::new();
        let mut k = 0;
        while k < free.len() {
            if steps == 0 {
                next.extend_from_slice(&free[k..]);
                break;
            }
            steps -= 1;
            let i = free[k];
            k += 1;
            let (u1, mut j1, u2, j2) = two_lowest(st.d.row(i), &st.v);
            let mut i0 = st.rows_of[j1].first().copied().unwrap_or(NONE);
            let lowered = u1 < u2;
            if lowered {
                st.v[j1] -= u2 - u1;
            } else if i0 != NONE && j2 != NONE {
                j1 = j2;
                i0 = st.rows_of[j2].first().copied().unwrap_or(NONE);
            }
            if i0 != NONE {
                st.col4row[i0] = NONE;
                if lowered {
                    // The displaced row bids at once, on the same column's raised price.
                    k -= 1;
                    free[k] = i0;
                } else {
                    next.push(i0);
                }
            }
            assign(st, i, j1);
        }
        free = next;
    }
    free
}
