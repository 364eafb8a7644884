//! The decode stage on the CPU (rayon over patches): each patch's dequantised coefficients
//! go back through its dictionary's synthesis n-mode products. The reference for
//! [`crate::gpu::decode`].

use rayon::prelude::*;

use crate::codes::Codes;
use crate::dictionary::{mode_offsets, mode_products, Ensemble};
use crate::patch::PatchShape;
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

/// The samples of view (du, dv) inside each of patches `range` (`my x mx x 3` each,
/// patch-major), without the rest of the patch: the view modes are contracted first, each
/// coefficient at (i0, i1, i2, i3, i4) adding `U0[du, i0] U1[dv, i1]` times its value to a
/// `my x mx x 3` core, and only the pixel and colour products follow. About a hundredth of
/// the whole patch's synthesis at the paper's 8 x 8 views; equal to that view of
/// [`decode_patches_cpu`] up to f32 rounding (the products are summed in another order).
pub fn decode_view_cpu(
    codes: &Codes,
    ens: &Ensemble,
    steps: &[f32],
    range: std::ops::Range<usize>,
    (du, dv): (usize, usize),
) -> Vec<f32> {
    let s = ens.shape;
    let pixels = PatchShape { mu: 1, mv: 1, ..s };
    let plane = pixels.len();
    let (offsets, _) = mode_offsets(s);
    let strides = s.strides();
    let mut out = vec![0f32; range.len() * plane];
    out.par_chunks_mut(plane).zip(range).zip(steps).for_each_init(
        || vec![0f32; mode_offsets(pixels).1],
        |small, ((x, p), &step)| {
            let dict = ens.dictionary(codes.membership[p] as usize);
            let (u0, u1) = (&dict[offsets[0]..], &dict[offsets[1]..]);
            // The reduced dictionary: 1 x 1 view matrices, then this one's pixel and colour ones.
            small[..2].fill(1.0);
            small[2..].copy_from_slice(&dict[offsets[2]..]);
            let q = Quantizer::new(step);
            for i in codes.offsets[p]..codes.offsets[p + 1] {
                let loc = codes.locations[i] as usize;
                let (i0, i1, rest) = (loc / strides[0], loc % strides[0] / strides[1], loc % strides[1]);
                x[rest] += q.value(codes.levels[i]) * u0[du * s.mu + i0] * u1[dv * s.mv + i1];
            }
            mode_products(x, pixels, small, false);
        },
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every view of random patches at an awkward shape: the slice equals the whole
    /// synthesis's within f32 rounding.
    #[test]
    fn a_view_of_the_patches_equals_that_view_of_the_whole_synthesis() {
        let shape = PatchShape { my: 3, mx: 4, mu: 3, mv: 2 };
        let ens = Ensemble::random(shape, 3, 4);
        let c = crate::bitstream::tests::random_compressed(9, 9, 2);
        // The random codes' 12-sample locations, spread over this shape's 216 samples.
        let codes =
            Codes { locations: c.codes.locations.iter().map(|&l| l * 17 % shape.len() as u32).collect(), ..c.codes };
        let mut codes = codes;
        for p in 0..codes.len() {
            codes.locations[codes.offsets[p]..codes.offsets[p + 1]].sort_unstable();
        }
        let n = codes.len();
        let steps: Vec<f32> = (0..n).map(|p| 0.01 + p as f32 * 1e-4).collect();
        let whole = decode_patches_cpu(&codes, &ens, &steps, 0..n);
        let plane = shape.my * shape.mx * 3;
        for (du, dv) in [(0, 0), (2, 1), (1, 0)] {
            let view = decode_view_cpu(&codes, &ens, &steps, 0..n, (du, dv));
            for p in 0..n {
                let at = p * shape.len() + (du * shape.mv + dv) * plane;
                for (a, b) in view[p * plane..(p + 1) * plane].iter().zip(&whole[at..at + plane]) {
                    assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "patch {p} view {du},{dv}: {a} vs {b}");
                }
            }
        }
    }
}
