//! The encode stage on the CPU (rayon over patches): Algorithm 1 for every patch against
//! every dictionary, the reference [`crate::gpu::encode`] is tested against and the
//! benchmark baseline.

use rayon::prelude::*;

use crate::codes::{Codes, Limit, Params};
use crate::dictionary::{mode_products, Ensemble};
use crate::select::{Choice, Quantizer, Terms};

/// Encodes patch-major `patches` (`ens.shape.len()` samples each) with one limit each.
pub fn encode_patches_cpu(patches: &[f32], limits: &[Limit], ens: &Ensemble, params: Params) -> Codes {
    let plen = ens.shape.len();
    let codes: Vec<PatchCode> = patches
        .par_chunks(plen)
        .zip(limits.par_iter())
        .map(|(patch, &l)| encode_patch(patch, l, ens, params))
        .collect();
    codes_of(codes)
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

/// Builds codes from per-patch results.
fn codes_of(patches: Vec<PatchCode>) -> Codes {
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
        // Step 2 epsilon = 0.02: 0.25 / 0.02 = 12.5 rounds up.
        assert_eq!(codes.levels, vec![45, 25, 13]);
        // With T = 2 nothing meets the budget: the least error at two coefficients wins, and
        // that is still the identity keeping the two largest spikes.
        let params = Params { sparsity: 2, epsilon: 0.01 };
        let codes = encode_patches_cpu(&patch, &limits, &ens, params);
        assert_eq!((codes.membership[0], codes.success[0]), (1, false));
        assert_eq!(codes.locations, vec![3, 17]);
    }
}
