//! The exact optimum on the GPU: a forward-reverse auction with epsilon scaling in f32
//! ([`crate::gpu::auction`], twinned on the CPU by [`crate::cpu::auction`]; the whole solve
//! is [`crate::gpu::auction::solve`]), then a dual certificate in f64 and, where it
//! fails, a repair by shortest augmenting paths from the auction's prices ([`repair`]).
//!
//! The auction works on D / C (C = the largest entry, so values lie in [0, 1] whatever the
//! input's scale) and minimises d + price. Forward rounds: each unassigned row bids on its
//! cheapest column (best value `b`, second best `s`) the price `p + (s - b) + eps`; each
//! column takes its highest bid (ties: the smallest row), the previous owner becomes
//! unassigned (Jacobi rounds, all bids of a round against the same prices). With m < n that
//! leaves columns unassigned, some at stale prices from earlier phases, while the
//! rectangular problem's optimality (Bertsekas and Castanon, asymmetric assignment) also
//! needs every unassigned column at most lambda, the lowest assigned price. So once every
//! row is assigned, reverse rounds follow: each unassigned column above lambda either
//! comes down to lambda (no row would gain more than eps from it there) or lowers its price
//! just enough to take a row from another column, which it may leave above lambda in turn.
//! Each phase ends with every row within eps of its cheapest column and every unassigned
//! column at most lambda. Epsilon goes from 2^-3 by factors of 8 to the precision of f32
//! prices; prices carry over between phases (unassigned ones raised to lambda, which keeps
//! the next phase's lambda from dropping), the assignment does not. A matrix of whole
//! numbers stops at one cost level instead ([`epsilons_for`]): below it the rows' many tied
//! columns make price wars of eps-sized bids, settled faster by the exact repair.
//!
//! The auction alone proves nothing (epsilon-optimal, in f32). [`repair::certify_or_repair`]
//! turns the prices into f64 potentials, lowers the price of each column whose row is not
//! exactly at its minimum as far as the other rows allow, frees the rows still not at their
//! minimum, and re-inserts them with [`augment::Augmenter`]; the final potentials are the
//! LP certificate, checked over every entry.

pub mod augment;
pub mod repair;

use crate::matrix::DistanceMatrix;

/// "No row" / "no column" in the auction's u32 arrays (GPU and CPU alike).
pub const NONE: u32 = u32::MAX;

/// The epsilon of each phase, relative to the normalised D (powers of two: exact in f32).
/// The last one is one f32 ulp of a price near 1: below it, rounding decides the bids.
pub fn epsilons() -> Vec<f32> {
    let mut eps: Vec<f32> = (1..=7).map(|k| (-3.0 * k as f32).exp2()).collect();
    eps.push(LAST_EPSILON);
    eps
}

/// The epsilons for `d` scaled by `scale`: [`epsilons`], or for a matrix of whole numbers
/// (a range of few levels has many ties) those down to one level, 1 / scale, and that level
/// last. On floor(u n) matrices (1000 x 1000, the CPU twin) this took 1517 forward rounds
/// instead of 12868, leaving 472 rows to the repair instead of 330.
pub fn epsilons_for(d: &DistanceMatrix, scale: f64) -> Vec<f32> {
    use rayon::prelude::*;
    let level = (1.0 / scale) as f32;
    let whole = scale >= 1.0 && d.data.par_iter().all(|x| x.fract() == 0.0);
    if !whole || level <= LAST_EPSILON {
        return epsilons();
    }
    let mut eps: Vec<f32> = epsilons().into_iter().filter(|&e| e > level).collect();
    eps.push(level);
    eps
}

/// The last phase's epsilon (2^-23).
pub const LAST_EPSILON: f32 = 1.0 / 8388608.0;

/// The scale D is divided by before the auction: its largest entry (1 for all zeros).
/// Entries are finite and >= 0 ([`DistanceMatrix::new`]), so a compare and select finds it
/// (which vectorises, where `f64::max`'s NaN rule does not).
pub fn scale_of(d: &DistanceMatrix) -> f64 {
    use rayon::prelude::*;
    let max = d
        .data
        .par_chunks(1 << 16)
        .map(|chunk| chunk.iter().fold(0.0f64, |m, &x| if x > m { x } else { m }))
        .reduce(|| 0.0, |a, b| if b > a { b } else { a });
    if max > 0.0 {
        max
    } else {
        1.0
    }
}

/// D / C in f32, row-major (what both auctions work on).
pub fn normalised(d: &DistanceMatrix, scale: f64) -> Vec<f32> {
    use rayon::prelude::*;
    d.data.par_iter().map(|&x| (x / scale) as f32).collect()
}

/// The auction's result: prices (in units of the normalised D) and a partial assignment
/// (`NONE` where a row is unassigned: only when the round limit was reached).
#[derive(Clone, Debug, PartialEq)]
pub struct AuctionState {
    pub prices: Vec<f32>,
    pub col4row: Vec<u32>,
    /// Forward rounds run, over all phases.
    pub rounds: u64,
    /// Reverse rounds run, over all phases.
    pub reverse_rounds: u64,
}

/// An exact solve on the GPU with its certificate (by the auction, or by the Hungarian
/// method of [`crate::hungarian`], whose figures are named in brackets).
#[derive(Clone, Debug)]
pub struct ExactSolution {
    pub assignment: Vec<usize>,
    pub cost: f64,
    /// Primal cost minus the dual objective of the final potentials (0 up to rounding).
    pub gap: f64,
    /// Rows the auction left with a column that is not exactly their cheapest, re-inserted
    /// by shortest augmenting paths (0).
    pub repaired_rows: usize,
    /// Whether the certificate failed and the CPU exact solver ran instead.
    pub fallback: bool,
    /// Forward rounds (prime passes).
    pub rounds: u64,
    /// Reverse rounds (dual updates).
    pub reverse_rounds: u64,
    /// The costs' upload to the device.
    pub upload_ms: f64,
    /// The GPU part after the upload (the whole GPU solve).
    pub auction_ms: f64,
    /// Certificate and repair on the host (the certificate).
    pub repair_ms: f64,
}

#[cfg(test)]
mod tests;
