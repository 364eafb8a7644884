//! The CPU encoder (rayon over patches): Algorithm 1 for every patch against every
//! dictionary, the reference the GPU encoder is tested against and the benchmark baseline.
//! Also the types both encoders produce ([`Codes`]) and the per-patch error budget.

use rayon::prelude::*;

use crate::dictionary::{mode_products, Ensemble};
use crate::error::{LfError, Result};
use crate::select::{Choice, Quantizer, Terms};

/// Sparsity and error threshold of one encode.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Most coefficients a patch may keep (T).
    pub sparsity: usize,
    /// Largest RMSE of a patch, values in [0, 1] (epsilon).
    pub epsilon: f32,
}

/// The quantisation step is tied to epsilon: with step = epsilon * sqrt(valid / P), every
/// coefficient costs at most (step/2)^2 after quantisation (rounding error if kept, its
/// value if it rounds to 0), so keeping every non-zero level leaves at most P (step/2)^2 =
/// valid * epsilon^2 / 4, a quarter of the budget: a patch can always meet the threshold
/// when T allows enough coefficients, even a border patch with few real samples.
pub const STEP_PER_EPSILON: f32 = 1.0;

/// Quantisation step of a patch with `valid` of its `len` samples inside the light field,
/// from the base step (that of a whole patch). Encoder and decoder compute it alike.
pub fn patch_step(base: f32, valid: usize, len: usize) -> f32 {
    base * (valid as f32 / len as f32).sqrt()
}

/// Smallest epsilon accepted: below it the f32 rounding margin of [`budget`] can exceed
/// the budget of a border patch.
pub const MIN_EPSILON: f32 = 1e-3;

impl Params {
    pub fn check(&self, patch_len: usize) -> Result<()> {
        if !(MIN_EPSILON..=1.0).contains(&self.epsilon) || !self.epsilon.is_finite() {
            return Err(LfError::Invalid(format!(
                "--epsilon {}: expected a value in [{MIN_EPSILON}, 1]",
                self.epsilon
            )));
        }
        if self.sparsity == 0 || self.sparsity > patch_len {
            return Err(LfError::Invalid(format!(
                "--sparsity {}: expected 1..={patch_len} (the patch's sample count)",
                self.sparsity
            )));
        }
        Ok(())
    }

    /// The quantisation step of a whole patch.
    pub fn base_step(&self) -> f32 {
        self.epsilon * STEP_PER_EPSILON
    }
}

/// Squared-error budget of a patch with `valid` samples inside the light field and norm
/// `norm`: epsilon^2 * valid (so the RMSE over its real samples is at most epsilon, padding
/// counted as error too), less a margin for f32 rounding in the n-mode products of the
/// encoder and the decoder (4 ulp of the patch norm per matrix row summed).
pub fn budget(epsilon: f32, valid: usize, norm: f64, mode_sum: usize) -> f32 {
    let margin = norm * mode_sum as f64 * (2f64).powi(-22);
    let limit = (epsilon as f64 * (valid as f64).sqrt() - margin).max(0.0);
    (limit * limit) as f32
}

/// Every patch's encoding: dictionary, kept coefficient locations (ascending) and levels.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Codes {
    pub membership: Vec<u32>,
    /// Whether the patch met its error budget within the sparsity.
    pub success: Vec<bool>,
    /// Squared error of the patch in coefficient space (padding included).
    pub errors: Vec<f32>,
    /// Patch `p`'s coefficients are `offsets[p]..offsets[p+1]` of `locations`/`levels`.
    pub offsets: Vec<usize>,
    pub locations: Vec<u32>,
    pub levels: Vec<i32>,
}

impl Codes {
    pub fn len(&self) -> usize {
        self.membership.len()
    }

    pub fn is_empty(&self) -> bool {
        self.membership.is_empty()
    }

    pub fn count(&self, p: usize) -> usize {
        self.offsets[p + 1] - self.offsets[p]
    }

    /// Appends `other` (the codes of the following patches).
    pub fn extend(&mut self, other: Codes) {
        let base = self.locations.len();
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.membership.extend(other.membership);
        self.success.extend(other.success);
        self.errors.extend(other.errors);
        self.offsets.extend(other.offsets.iter().skip(1).map(|o| o + base));
        self.locations.extend(other.locations);
        self.levels.extend(other.levels);
    }

    /// A copy of patches `range` (offsets from 0).
    pub fn slice(&self, range: std::ops::Range<usize>) -> Codes {
        let (c0, c1) = (self.offsets[range.start], self.offsets[range.end]);
        Codes {
            membership: self.membership[range.clone()].to_vec(),
            success: self.success[range.clone()].to_vec(),
            errors: self.errors[range.clone()].to_vec(),
            offsets: self.offsets[range.start..=range.end].iter().map(|o| o - c0).collect(),
            locations: self.locations[c0..c1].to_vec(),
            levels: self.levels[c0..c1].to_vec(),
        }
    }

    /// Builds codes from per-patch results.
    fn from_patches(patches: Vec<PatchCode>) -> Codes {
        let mut codes = Codes { offsets: vec![0], ..Default::default() };
        for p in patches {
            codes.membership.push(p.dict);
            codes.success.push(p.success);
            codes.errors.push(p.err as f32);
            codes.locations.extend(p.coefficients.iter().map(|c| c.0));
            codes.levels.extend(p.coefficients.iter().map(|c| c.1));
            codes.offsets.push(codes.locations.len());
        }
        codes
    }
}

struct PatchCode {
    dict: u32,
    success: bool,
    err: f64,
    coefficients: Vec<(u32, i32)>,
}

/// Algorithm 1 for one patch: the sparsest dictionary meeting the budget (ties by error,
/// then by lower index), else the one with the least error at T coefficients.
fn encode_patch(patch: &[f32], limit: Limit, ens: &Ensemble, params: Params) -> PatchCode {
    let q = Quantizer { step: limit.step, inv_step: limit.inv_step };
    let budget = limit.budget;
    let mut x = patch.to_vec();
    let mut terms = Terms::new(&x, q);
    let mut best: Option<(usize, Choice)> = None;
    for k in 0..ens.k {
        x.copy_from_slice(patch);
        mode_products(&mut x, ens.shape, ens.dictionary(k), true);
        terms.reset(&x, q);
        let cap = best.map_or(params.sparsity, |(_, b)| b.count);
        if let Some(c) = terms.fewest_within(budget as f64, cap) {
            if best.is_none_or(|(_, b)| c.count < b.count || (c.count == b.count && c.err < b.err)) {
                best = Some((k, c));
            }
        }
    }
    let success = best.is_some();
    if best.is_none() {
        for k in 0..ens.k {
            x.copy_from_slice(patch);
            mode_products(&mut x, ens.shape, ens.dictionary(k), true);
            terms.reset(&x, q);
            let c = terms.most_within(params.sparsity);
            if best.is_none_or(|(_, b)| c.err < b.err) {
                best = Some((k, c));
            }
        }
    }
    let (k, choice) = best.expect("at least one dictionary");
    x.copy_from_slice(patch);
    mode_products(&mut x, ens.shape, ens.dictionary(k), true);
    terms.reset(&x, q);
    let coefficients = choice.kept(&terms.keys).into_iter().map(|j| (j, q.level(x[j as usize]))).collect();
    PatchCode { dict: k as u32, success, err: choice.err, coefficients }
}

/// Per-patch limits: squared-error budget and quantisation step (with its reciprocal, so
/// both encoders quantise with bit-identical arithmetic). 16 bytes, as the GPU reads them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Limit {
    pub budget: f32,
    pub step: f32,
    pub inv_step: f32,
    pub pad: f32,
}

impl Limit {
    /// Limits of a patch with `valid` of its `len` samples inside the light field.
    pub fn new(params: Params, valid: usize, len: usize, norm: f64, mode_sum: usize) -> Limit {
        let step = patch_step(params.base_step(), valid, len);
        Limit { budget: budget(params.epsilon, valid, norm, mode_sum), step, inv_step: 1.0 / step, pad: 0.0 }
    }
}

/// Encodes patch-major `patches` (`ens.shape.len()` samples each) with one limit each.
pub fn encode_patches_cpu(patches: &[f32], limits: &[Limit], ens: &Ensemble, params: Params) -> Codes {
    let plen = ens.shape.len();
    let codes: Vec<PatchCode> = patches
        .par_chunks(plen)
        .zip(limits.par_iter())
        .map(|(patch, &l)| encode_patch(patch, l, ens, params))
        .collect();
    Codes::from_patches(codes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::PatchShape;

    #[test]
    fn picks_the_sparsest_dictionary_and_stores_its_largest_levels() {
        let shape = PatchShape { my: 2, mx: 3, mu: 2, mv: 1 };
        let plen = shape.len();
        // Dictionary 1 is the identity, in which a patch of three spikes has three
        // coefficients; dictionary 0 (random) spreads them over all of them.
        let mut ens = Ensemble::random(shape, 2, 7);
        let d = ens.dictionary_len();
        let (offsets, _) = crate::dictionary::mode_offsets(shape);
        for (n, m) in shape.modes().into_iter().enumerate() {
            for i in 0..m * m {
                ens.mats[d + offsets[n] + i] = if i % (m + 1) == 0 { 1.0 } else { 0.0 };
            }
        }
        let mut patch = vec![0f32; plen];
        patch[3] = 0.9;
        patch[17] = 0.5;
        patch[30] = 0.25;
        let params = Params { sparsity: plen, epsilon: 0.01 };
        let limits = [Limit::new(params, plen, plen, 1.0, 10)];
        let codes = encode_patches_cpu(&patch, &limits, &ens, params);
        assert_eq!(codes.membership, vec![1]);
        assert!(codes.success[0]);
        assert_eq!(codes.locations, vec![3, 17, 30]);
        assert_eq!(codes.levels, vec![90, 50, 25]);
        // With T = 2 nothing meets the budget: the least error at two coefficients wins, and
        // that is still the identity keeping the two largest spikes.
        let params = Params { sparsity: 2, epsilon: 0.01 };
        let codes = encode_patches_cpu(&patch, &limits, &ens, params);
        assert_eq!((codes.membership[0], codes.success[0]), (1, false));
        assert_eq!(codes.locations, vec![3, 17]);
    }
}
