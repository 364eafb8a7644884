//! The CPU decoder (rayon over patches): each patch's dequantised coefficients go back
//! through its dictionary's synthesis n-mode products. The reference for the GPU decoder.

use rayon::prelude::*;

use crate::dictionary::{mode_products, Ensemble};
use crate::encoder::Codes;
use crate::select::Quantizer;

/// Patch-major samples of patches `range` of `codes`; `steps` holds each one's
/// quantisation step.
pub fn decode_patches_cpu(codes: &Codes, ens: &Ensemble, steps: &[f32], range: std::ops::Range<usize>) -> Vec<f32> {
    let plen = ens.shape.len();
    let mut out = vec![0f32; range.len() * plen];
    out.par_chunks_mut(plen).zip(range).zip(steps).for_each(|((x, p), &step)| {
        let q = Quantizer::new(step);
        for i in codes.offsets[p]..codes.offsets[p + 1] {
            x[codes.locations[i] as usize] = q.value(codes.levels[i]);
        }
        mode_products(x, ens.shape, ens.dictionary(codes.membership[p] as usize), false);
    });
    out
}
