//! The exact optimum of an m x n matrix (m <= n) of whole numbers with few levels: the
//! Hungarian method (Munkres' steps, with Bourgeois and Lassalle's rectangular case) over
//! the zeros of the reduced costs d - u - v, in i32, so every step is exact. On such
//! matrices (floor(u n): about one level per column) most rows have several zero-cost
//! columns after the reductions, and a dual update makes many new zeros at once, so few
//! updates are needed; an auction instead meets price wars between the many tied columns
//! ([`crate::auction`]). The GPU runs it
//! ([`crate::gpu::hungarian`]); [`crate::cpu::hungarian`] is its sequential twin.
//!
//! The steps, on the zeros (kept as a list of entries, rebuilt after each dual update):
//! 1. Reductions: u[i] = min_j d[i][j]; on a square matrix also v[j] = min_i d[i][j] - u[i]
//!    (else v = 0: with unused columns, the dual needs v <= 0).
//! 2. A first matching: each zero whose row and column are free is starred.
//! 3. Every starred column is covered; with m covered the stars are the optimum.
//! 4. Prime: an uncovered zero in an uncovered row is primed, once per row. If its row has
//!    a star, the row is covered and the star's column uncovered; if not, the row is free
//!    and step 5 follows once this pass over the zeros ends. Passes repeat while they prime;
//!    a pass that primes nothing leads to step 6.
//! 5. Augment: from every free primed row, the path prime, star in the prime's column, that
//!    star row's prime, ... ends at a column without a star; the columns on the paths
//!    remember which row primed them (one row each, where paths join). From each such end
//!    column the remembered rows are walked back, each starring its prime and giving up its
//!    star, until a free row. Walks from different ends never share a row or a column (each
//!    row primes one column, stars are a matching), so they run in parallel. Back to 3.
//! 6. Dual update: delta = the least d - u - v over uncovered rows and columns (> 0);
//!    uncovered rows u += delta, covered columns v -= delta (reduced costs fall where row
//!    and column are uncovered, rise where both are covered); the zero list is rebuilt and
//!    step 4 goes on with the covers and primes it had. Only starred columns are ever
//!    covered and a starred column stays starred, so v only falls and stays 0 on columns
//!    never used: the final u, v are the rectangular dual (v <= 0, 0 where unused), shifted
//!    by a constant on a square matrix.
//!
//! Priming runs in parallel on the GPU: a row takes its prime with one compare-and-swap, so
//! each row primes once per step 4, and a column is uncovered only after the row whose star
//! it holds has primed. Which optimum is found may differ between runs where the matrix has
//! several; its cost does not. The final potentials are checked as the LP certificate over
//! every entry in f64 ([`certify`]), as the auction's are.

use crate::auction::repair::{checked_or_exact, Potentials};
use crate::auction::ExactSolution;
use crate::error::Result;
use crate::matrix::DistanceMatrix;

/// "No row" / "no column" (GPU and CPU alike).
pub const NONE: u32 = u32::MAX;

/// The most levels per column for which the Hungarian method is chosen over the auction on
/// a wide matrix (m < n): the largest entry at most this many times n. floor(u n) has one
/// level per column; a photomosaic's squared colour distances have millions of levels, and
/// there every dual update makes few zeros.
pub const LEVELS_PER_COLUMN: f64 = 4.0;

/// The same on a square matrix, where the auction's last rows fight over the last columns
/// for longer. Measured on the H200 (`mosaic bench --costs`): at 2^20 levels the auction
/// won at n = 4096 (256 levels a column: 385 against 653 ms), the Hungarian method at
/// n = 10000 (105 a column: 1057 against 1635 ms).
pub const LEVELS_PER_COLUMN_SQUARE: f64 = 128.0;

/// The largest entry for which the Hungarian method is chosen for an m x n matrix.
pub fn largest_level(m: usize, n: usize) -> f64 {
    let per_column = if m == n { LEVELS_PER_COLUMN_SQUARE } else { LEVELS_PER_COLUMN };
    per_column * n as f64
}

/// The first potentials (step 1) of the m x n `d`: row minima, and column minima of what
/// remains on a square matrix (0 otherwise).
pub fn reductions(d: &[i32], m: usize, n: usize) -> (Vec<i32>, Vec<i32>) {
    let u = row_minima(d, n);
    let v = if m == n { column_minima(d, n, &u) } else { vec![0; n] };
    (u, v)
}

/// The largest entry taken at all: whole numbers below 2^24 are exact in f32 (the matrix
/// files' type) and leave i32 room for the potentials' sums.
pub const LARGEST: f64 = (1u32 << 24) as f64;

/// `d`'s entries as i32 (exact for whole numbers below [`LARGEST`]).
pub fn costs(d: &DistanceMatrix) -> Vec<i32> {
    use rayon::prelude::*;
    d.data.par_iter().map(|&x| x as i32).collect()
}

/// The method's end state: stars (the column of each row) and the potentials.
#[derive(Clone, Debug, PartialEq)]
pub struct HungarianState {
    pub col4row: Vec<u32>,
    pub u: Vec<i32>,
    pub v: Vec<i32>,
    /// Passes of step 4 over the zeros.
    pub passes: u64,
    /// Dual updates (step 6).
    pub dual_updates: u64,
    /// Augmentations (step 5; each may flip many paths).
    pub augmentations: u64,
}

/// Row reductions: the least entry of each row of `d` (rows of n).
pub fn row_minima(d: &[i32], n: usize) -> Vec<i32> {
    d.chunks(n).map(|row| row.iter().copied().min().unwrap_or(0)).collect()
}

/// Column reductions: the least d[i][j] - u[i] of each column (square matrices).
pub fn column_minima(d: &[i32], n: usize, u: &[i32]) -> Vec<i32> {
    let mut v = vec![i32::MAX; n];
    for (row, &ui) in d.chunks(n).zip(u) {
        for (vj, &x) in v.iter_mut().zip(row) {
            *vj = (*vj).min(x - ui);
        }
    }
    v
}

/// The entries i n + j where d - u - v is 0, in increasing order (rows of n).
pub fn zeros(d: &[i32], n: usize, u: &[i32], v: &[i32]) -> Vec<u32> {
    let mut zeros = Vec::new();
    for (i, (row, &ui)) in d.chunks(n).zip(u).enumerate() {
        for (j, (&x, &vj)) in row.iter().zip(v).enumerate() {
            if x - ui - vj == 0 {
                zeros.push((i * n + j) as u32);
            }
        }
    }
    zeros
}

/// The certified solution from a finished state: the potentials in f64 (on a square matrix
/// shifted so that v <= 0, the form the check expects), checked over every entry, or the
/// CPU exact solver's should the check ever fail ([`checked_or_exact`]). `upload_ms` and
/// `gpu_ms` are the times of the costs' upload and of the GPU solve.
pub fn certify(d: &DistanceMatrix, state: &HungarianState, upload_ms: f64, gpu_ms: f64) -> Result<ExactSolution> {
    let start = std::time::Instant::now();
    let top = if d.rows == d.cols { state.v.iter().copied().max().unwrap_or(0) as f64 } else { 0.0 };
    let solution = Potentials {
        assignment: state.col4row.iter().map(|&j| j as usize).collect(),
        u: state.u.iter().map(|&u| u as f64 + top).collect(),
        v: state.v.iter().map(|&v| v as f64 - top).collect(),
    };
    // Whole numbers below 2^24 and their sums are exact in f64, so any tolerance below 1
    // would do; this one scales with the potentials, as the auction's does with D.
    let largest = solution.u.iter().chain(&solution.v).fold(1.0f64, |a, &x| a.max(x.abs()));
    let tol = 1e-9 * largest;
    let (solution, gap, fallback) = checked_or_exact(d, solution, tol)?;
    Ok(ExactSolution {
        cost: d.cost(&solution.assignment),
        assignment: solution.assignment,
        gap,
        repaired_rows: 0,
        fallback,
        rounds: state.passes,
        reverse_rounds: state.dual_updates,
        upload_ms,
        auction_ms: gpu_ms,
        repair_ms: start.elapsed().as_secs_f64() * 1e3,
    })
}

#[cfg(test)]
mod tests;
