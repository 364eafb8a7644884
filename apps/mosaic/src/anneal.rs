//! Simulated annealing (Section 3.3), on the CPU, seeded and deterministic.
//!
//! The state assigns every patch a slot, one use of a tile ([`Slots`]: each tile offered
//! `repeat` times), no slot twice; it starts from the greedy assignment. A move picks a
//! random patch r and a random other slot w: a free w replaces r's slot (the paper's move);
//! a w used by patch r2 swaps the slots of r and r2 (the paper's square-matrix move, used for
//! every size so no proposal is wasted). So a tile never serves more than `repeat` patches.
//! Under `--min-distance` ([`Spacing`]) the start holds the rule and a move that would break
//! it is never made.
//! Moves are accepted by the Metropolis rule of Eq. 8 and the temperature falls
//! geometrically, tau' = f tau. The best state seen is returned.

use indicatif::ProgressBar;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::matrix::{DistanceMatrix, Slots};
use crate::spacing::Spacing;

const FREE: usize = usize::MAX;

/// Annealing schedule.
#[derive(Clone, Debug)]
pub struct AnnealParams {
    pub seed: u64,
    /// Number of temperature levels.
    pub levels: u32,
    /// Cooling factor f per level (Section 3.3: 0.85..0.99).
    pub cooling: f64,
    /// Proposed moves per level, per patch.
    pub moves_per_patch: u32,
}

impl Default for AnnealParams {
    fn default() -> Self {
        AnnealParams { seed: 0, levels: 200, cooling: 0.95, moves_per_patch: 50 }
    }
}

/// Cost change of a move of patch `r` to slot `w`, and the patch `w` belongs to (or FREE).
fn delta(d: &Slots, a: &[usize], owner: &[usize], r: usize, w: usize) -> (f64, usize) {
    let b = a[r];
    let r2 = owner[w];
    let mut e = d.at(r, w) - d.at(r, b);
    if r2 != FREE {
        e += d.at(r2, b) - d.at(r2, w);
    }
    (e, r2)
}

/// Whether moving patch `r` to slot `w` (and `w`'s patch `r2` to `r`'s slot) keeps the rule.
fn spaced(spacing: Option<&Spacing>, d: &Slots, a: &[usize], r: usize, w: usize, r2: usize) -> bool {
    let Some(s) = spacing else { return true };
    let tile_of = |k: usize| d.tile(a[k]);
    s.allows_except(tile_of, r, d.tile(w), r2) && (r2 == FREE || s.allows_except(tile_of, r2, d.tile(a[r]), r))
}

/// Anneals from `greedy` (the greedy assignment, holding `spacing` where there is one), each
/// tile used at most `repeat` times; `progress` advances once per temperature level.
pub fn solve(
    d: &DistanceMatrix,
    greedy: Vec<usize>,
    repeat: usize,
    spacing: Option<&Spacing>,
    params: &AnnealParams,
    progress: &ProgressBar,
) -> Vec<usize> {
    let slots = Slots::new(d, repeat);
    if slots.count < 2 {
        return greedy;
    }
    let mut a = slots.of_assignment(&greedy);
    let d = &slots;
    let mut owner = vec![FREE; d.count];
    for (i, &j) in a.iter().enumerate() {
        owner[j] = i;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let rows = d.d.rows;
    let propose = |rng: &mut ChaCha8Rng, a: &[usize]| {
        let r = rng.gen_range(0..rows);
        let mut w = rng.gen_range(0..d.count - 1);
        if w >= a[r] {
            w += 1;
        }
        (r, w)
    };
    // Start where about half of the uphill moves would be accepted.
    let uphill: Vec<f64> = (0..1000)
        .map(|_| {
            let (r, w) = propose(&mut rng, &a);
            delta(d, &a, &owner, r, w).0
        })
        .filter(|&e| e > 0.0)
        .collect();
    if uphill.is_empty() {
        return greedy;
    }
    let mut tau = uphill.iter().sum::<f64>() / uphill.len() as f64 / std::f64::consts::LN_2;
    let mut cost: f64 = a.iter().enumerate().map(|(i, &s)| d.at(i, s)).sum();
    let (mut best, mut best_cost) = (a.clone(), cost);
    let moves = params.moves_per_patch as usize * rows;
    for _ in 0..params.levels {
        for _ in 0..moves {
            let (r, w) = propose(&mut rng, &a);
            let (e, r2) = delta(d, &a, &owner, r, w);
            if (e <= 0.0 || rng.gen::<f64>() < (-e / tau).exp()) && spaced(spacing, d, &a, r, w, r2) {
                let b = a[r];
                a[r] = w;
                owner[w] = r;
                owner[b] = r2;
                if r2 != FREE {
                    a[r2] = b;
                }
                cost += e;
                if cost < best_cost {
                    best_cost = cost;
                    best.copy_from_slice(&a);
                }
            }
        }
        tau *= params.cooling;
        progress.inc(1);
    }
    best.into_iter().map(|s| d.tile(s)).collect()
}
