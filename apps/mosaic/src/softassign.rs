//! SoftAssign (Sections 3.4 and 5): deterministic annealing of a fuzzy correspondence matrix
//! M kept doubly stochastic by Sinkhorn normalisation, with the outlier row that lets tiles
//! go unused, then a final discretisation to a valid assignment.
//!
//! Form used here (the same on the CPU and the GPU, so one is the oracle of the other):
//! M is never stored. It is represented by row potentials f (one per patch) and column
//! potentials g (one per tile), M[i][j] = exp(clamp((f[i] + g[j] - (d[i][j] - alpha)) / t)),
//! and the outlier row is O[j] = exp(clamp(g[j] / t)) (an unused tile costs 0, a match
//! costs d - alpha, Eq. 9). One Sinkhorn iteration is one pass over D that normalises every
//! row (f[i] -= t ln rowsum) while summing the row-normalised columns, then a small pass that
//! scales every column together with its outlier entry to the tile's capacity N, the uses it
//! may have (`--repeat`, 1 by default): g[j] -= t (ln (colsum + O[j]) - ln N).
//! The clamp is Section 5.1's: [-70, 70] in f32 (GPU), [-650, 650] in f64 (CPU).
//! On large matrices the GPU runs the same recurrence in scaling form after each cooling
//! iteration's first Sinkhorn iteration: M = K u v with K that iteration's M stored in f16
//! and row and column scalings u and v, folded back into f and g at the end of the cooling
//! iteration (`sinkhorn_scaled.comp`; [`crate::gpu::softassign::SCALED_BOUND`]).
//!
//! Differences from the paper's pseudo-code, and why:
//! - The update is Gold et al.'s linear-assignment softassign, M = exp(-(D - alpha) / t)
//!   followed by Sinkhorn, which is the minimiser of Eq. 9 for fixed t; the pseudo-code's
//!   `Q = M .* (D - alpha)` would make the objective depend on the previous M.
//! - With a linear objective, a stabilisation iteration's `exp` step recomputes the same
//!   kernel, so it is fused into the normalisation passes and the Sinkhorn state carries over
//!   (warm start) between stabilisations and temperatures instead of restarting from fresh
//!   exponentials: `stabilisations x sinkhorn` normalisations run per temperature. The
//!   outlier row keeps its column scaling rather than being refreshed each stabilisation.
//! - M starts from f = g = 0 (the first pass sees exp(-(D - alpha) / t)), not from small
//!   random values: the fixed point does not depend on the start, and runs are reproducible.
//! - The pseudo-code's per-cooling-iteration `sum_all(Q)` test (keep the M of lowest cost)
//!   is left out: with warm-started potentials each temperature refines the previous one,
//!   and only the final M is discretised.
//! - Temperatures (t0) and alpha are in units of the mean of D, so defaults carry across
//!   matrices of any scale. With the outlier row absorbing the n - m unused tiles, alpha
//!   shifts the row potentials and cancels at convergence; it matters only while the
//!   normalisation has not converged.
//! - The discretisation is greedy on the final matrix: candidate pairs (the `CANDIDATES`
//!   largest entries of each row of M) are taken in order of decreasing M when both patch
//!   and tile are still free (a tile is free until it has N patches); any patch left takes
//!   its largest entry among free tiles.

use rayon::prelude::*;

use crate::matrix::{effective_repeat, DistanceMatrix};

/// Clamp of the exponent in f32 (Section 5.1).
pub const CLAMP_F32: f32 = 70.0;
/// Clamp of the exponent in f64 (Section 5.1).
pub const CLAMP_F64: f64 = 650.0;
/// Candidates per row for the final discretisation.
const CANDIDATES: usize = 8;

/// SoftAssign parameters (Section 5's t0, tk, alpha and iteration counts).
#[derive(Clone, Debug, serde::Serialize)]
pub struct SoftAssignParams {
    /// Initial temperature, in units of the mean distance.
    pub t0: f64,
    /// Cooling factor tk: t <- tk t after each cooling iteration.
    pub cooling: f64,
    /// Bias alpha of Eq. 9, in units of the mean distance.
    pub alpha: f64,
    /// Temperature cooling iterations.
    pub iterations: u32,
    /// Temperature stabilisation iterations per cooling iteration.
    pub stabilisations: u32,
    /// Sinkhorn iterations per stabilisation iteration.
    pub sinkhorn: u32,
}

impl Default for SoftAssignParams {
    fn default() -> Self {
        SoftAssignParams { t0: 1.0, cooling: 0.95, alpha: 0.0, iterations: 200, stabilisations: 10, sinkhorn: 10 }
    }
}

impl SoftAssignParams {
    /// Normalisations per temperature.
    pub fn per_temperature(&self) -> u32 {
        self.stabilisations * self.sinkhorn
    }

    /// Absolute temperature of cooling iteration `k` for a matrix with mean distance `scale`.
    pub fn temperature(&self, k: u32, scale: f64) -> f64 {
        self.t0 * scale * self.cooling.powi(k as i32)
    }

    /// Checks ranges; every value is user input.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.t0 > 0.0 && self.t0.is_finite()) {
            return Err(format!("t0 must be > 0 (got {})", self.t0));
        }
        if !(self.cooling > 0.0 && self.cooling < 1.0) {
            return Err(format!("cooling factor must be in (0, 1) (got {})", self.cooling));
        }
        if !self.alpha.is_finite() {
            return Err(format!("alpha must be finite (got {})", self.alpha));
        }
        if self.iterations == 0 || self.stabilisations == 0 || self.sinkhorn == 0 {
            return Err("iteration counts must be >= 1".into());
        }
        Ok(())
    }
}

/// The scale temperatures are relative to (mean distance; 1 for an all-zero matrix).
pub fn scale_of(d: &DistanceMatrix) -> f64 {
    let mean = d.mean();
    if mean > 0.0 {
        mean
    } else {
        1.0
    }
}

/// The column marginal: the uses a tile may have (no more than one per patch).
pub fn capacity(d: &DistanceMatrix, repeat: usize) -> f64 {
    effective_repeat(repeat, d.rows) as f64
}

/// Row and column potentials: the whole SoftAssign state.
#[derive(Clone, Debug)]
pub struct Potentials {
    pub f: Vec<f64>,
    pub g: Vec<f64>,
}

/// Final discretisation: greedy on M (equivalently on the reduced cost d - alpha - f - g,
/// smallest first) over each row's best candidates, then leftover patches take their best
/// free tile; a tile is free until it has `repeat` patches.
pub fn discretise(d: &DistanceMatrix, p: &Potentials, repeat: usize) -> Vec<usize> {
    let reduced = |i: usize, j: usize| d.at(i, j) - p.f[i] - p.g[j];
    let k = CANDIDATES.min(d.cols);
    let mut pairs: Vec<(f64, usize, usize)> = (0..d.rows)
        .into_par_iter()
        .flat_map_iter(|i| {
            let mut row: Vec<(f64, usize)> = (0..d.cols).map(|j| (reduced(i, j), j)).collect();
            row.select_nth_unstable_by(k - 1, |a, b| a.0.total_cmp(&b.0));
            row.truncate(k);
            row.into_iter().map(move |(r, j)| (r, i, j))
        })
        .collect();
    pairs.par_sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut assignment = vec![usize::MAX; d.rows];
    let mut uses = vec![0usize; d.cols];
    for &(_, i, j) in &pairs {
        if assignment[i] == usize::MAX && uses[j] < repeat {
            assignment[i] = j;
            uses[j] += 1;
        }
    }
    for (i, tile) in assignment.iter_mut().enumerate() {
        if *tile == usize::MAX {
            let j = (0..d.cols)
                .filter(|&j| uses[j] < repeat)
                .min_by(|&a, &b| reduced(i, a).total_cmp(&reduced(i, b)))
                .expect("m <= n x repeat leaves a free tile");
            *tile = j;
            uses[j] += 1;
        }
    }
    assignment
}
