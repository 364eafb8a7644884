//! D in half precision for the atomic kernel with [`super::atomic::AtomicShape::half`]:
//! half the bytes of the f32 copy (32 MiB instead of 64 at 2048 x 8192, which fits an
//! H100's or H200's 50 MB L2, so successive Sinkhorn dispatches can read it from there).
//!
//! Each entry is D's f32 value times 2^-k, rounded to the nearest IEEE half (ties to even);
//! the kernel multiplies by 2^k again, which is exact. D may be as large as f32's range
//! ([`DistanceMatrix::new`]), far beyond f16's 65504, and temperatures are relative to the
//! mean distance ([`crate::softassign::scale_of`]), so only the relative precision matters:
//! k is chosen from max(D) so that the largest entry scales into (2^14, 2^15], where no entry
//! can round past f16's range, and entries stay normal halves (11 significant bits, relative
//! error at most 2^-11) down to 2^-29 of the largest. k is kept in [-126, 112] so that 2^k
//! is a normal f32; only where max(D) > 2^127 does the largest scaled entry exceed 2^15,
//! and entries past 65504 x 2^112 saturate there (relative error below 2^-11).
//!
//! Rows are padded with zeros to a multiple of [`GROUP_COLUMNS`] columns, so each 4-column
//! group is one 8-byte load whatever n is. The conversion runs on the host, where D already
//! is before its upload: one parallel pass, no shader of its own, and [`rounded`] (the
//! kernel's CPU twin runs on it) shares the rounding code, so the two agree bit for bit.

use half::f16;
use rayon::prelude::*;

use crate::matrix::DistanceMatrix;

/// Columns per group: rows are padded to a multiple of this (8 bytes of halves).
pub const GROUP_COLUMNS: usize = 4;
/// Bits of f16's largest power of two a scaled entry may reach (2^15 < 65504).
const TOP_EXPONENT: i32 = 15;

/// D as the half-precision atomic kernel reads it.
pub struct HalfMatrix {
    /// Rows of n rounded up to [`GROUP_COLUMNS`] halves, two per word, the even column in
    /// the low 16 bits (as `unpackHalf2x16` reads them).
    pub packed: Vec<u32>,
    /// The power of two 2^k the halves are multiplied by.
    pub scale: f32,
}

/// The power of two the halves of `d` are multiplied by (see the module's documentation).
fn scale_for(d: &DistanceMatrix) -> f32 {
    let largest = d.data.par_iter().copied().reduce(|| 0.0, f64::max) as f32;
    if largest == 0.0 {
        return 1.0;
    }
    let k = (largest.log2().ceil() as i32 - TOP_EXPONENT).clamp(-126, 112);
    2f32.powi(k)
}

/// Entry `v` of D as a half of `1 / scale` (an exact power of two), saturating at f16's
/// largest finite value.
fn to_half(v: f64, inv_scale: f32) -> f16 {
    f16::from_f32(((v as f32) * inv_scale).min(f16::MAX.to_f32()))
}

impl HalfMatrix {
    /// Rounds and packs `d`.
    pub fn new(d: &DistanceMatrix) -> HalfMatrix {
        let scale = scale_for(d);
        let inv_scale = scale.recip();
        let words = d.cols.next_multiple_of(GROUP_COLUMNS) / 2;
        let mut packed = vec![0u32; d.rows * words];
        packed.par_chunks_mut(words).enumerate().for_each(|(i, row)| {
            let half = |j: usize| d.row(i).get(j).map_or(0, |&v| u32::from(to_half(v, inv_scale).to_bits()));
            for (p, word) in row.iter_mut().enumerate() {
                *word = half(2 * p) | (half(2 * p + 1) << 16);
            }
        });
        HalfMatrix { packed, scale }
    }
}

/// D rounded exactly as [`HalfMatrix::new`] rounds it, in f64: the matrix the half-precision
/// kernel sees, for its CPU twin. Rounding it again changes nothing.
pub fn rounded(d: &DistanceMatrix) -> DistanceMatrix {
    let scale = scale_for(d);
    let inv_scale = scale.recip();
    let data = d.data.par_iter().map(|&v| to_half(v, inv_scale).to_f64() * f64::from(scale)).collect();
    DistanceMatrix::new(d.rows, d.cols, data).expect("rounding keeps distances finite and non-negative")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed halves, unpacked, times the scale: `rounded`, zeros in the padding, each
    /// entry within 2^-11 relative of D's f32 value (normal halves); rounding is idempotent.
    #[test]
    fn packed_halves_are_the_rounded_matrix() {
        for (m, n, seed) in [(7, 13, 4), (3, 4, 5), (1, 1, 6), (5, 1027, 7)] {
            let d = crate::bench::matrix(m, n, seed);
            let h = HalfMatrix::new(&d);
            let r = rounded(&d);
            let stride = n.next_multiple_of(GROUP_COLUMNS);
            assert_eq!(h.packed.len(), m * stride / 2);
            let unpacked = |i: usize, j: usize| {
                let word = h.packed[(i * stride + j) / 2];
                f16::from_bits((word >> (16 * (j % 2))) as u16).to_f64() * f64::from(h.scale)
            };
            for i in 0..m {
                for j in 0..stride {
                    let want = if j < n { r.at(i, j) } else { 0.0 };
                    assert_eq!(unpacked(i, j), want, "{m}x{n} ({i}, {j})");
                }
                for j in 0..n {
                    let exact = f64::from(d.at(i, j) as f32);
                    assert!((r.at(i, j) - exact).abs() <= exact * 2f64.powi(-11), "{m}x{n} ({i}, {j})");
                }
            }
            assert_eq!(rounded(&r).data, r.data, "{m}x{n}: rounding twice");
        }
    }

    /// Distances far beyond f16's range, and tiny ones, keep their relative precision; an
    /// all-zero matrix stays zero; entries near f32's largest saturate instead of overflowing.
    #[test]
    fn scale_keeps_any_range_finite() {
        for factor in [1e-30, 1e-3, 1e5, 1e30] {
            let d = crate::bench::matrix(4, 9, 2);
            let big = DistanceMatrix::new(4, 9, d.data.iter().map(|v| v * factor).collect()).unwrap();
            for (&r, &v) in rounded(&big).data.iter().zip(&big.data) {
                let exact = f64::from(v as f32);
                assert!((r - exact).abs() <= exact * 2f64.powi(-11), "x{factor}: {r} for {exact}");
            }
        }
        let zero = DistanceMatrix::new(2, 3, vec![0.0; 6]).unwrap();
        assert!(rounded(&zero).data.iter().all(|&v| v == 0.0));
        let top = DistanceMatrix::new(1, 2, vec![f64::from(f32::MAX), 1.0]).unwrap();
        let r = rounded(&top);
        assert!(r.data[0].is_finite() && r.data[0] <= f64::from(f32::MAX));
        assert!((r.data[0] / f64::from(f32::MAX) - 1.0).abs() < 2f64.powi(-11));
    }
}
