//! D in half the bytes for the atomic kernel ([`super::Kernel::AtomicF16`]): each row
//! minus its own offset c_i (its minimum, rounded to f32), times a power of two, in IEEE
//! half precision, two columns per u32 and rows padded to 4 columns (one 8-byte load).
//!
//! Subtracting a row constant changes nothing in SoftAssign: M[i][j] depends on
//! f[i] - d[i][j], so the kernel runs on h = d - c with f shifted by -c (the exponent, and
//! so the clamp, sees the same value). What changes is the rounding: h carries 11
//! significant bits, so an entry near its row's minimum (the entries an assignment takes)
//! is exact to 2^-12 of its distance from that minimum, while entries far above it, whose
//! M is negligible once the temperature is low, are the coarsest. The power-of-two scale
//! (exact) puts the largest |h| in [2^14, 2^15], so no entry overflows and small ones stay
//! normal. The kernel's CPU twin runs on [`HalfMatrix::dequantised`], the matrix the GPU
//! sees, exactly.

use rayon::prelude::*;

use crate::error::Result;
use crate::matrix::DistanceMatrix;

/// Columns per row group: rows are padded to a multiple of this (8 bytes).
pub const COLUMNS_PER_GROUP: usize = 4;

/// D as the f16 atomic kernel reads it.
pub struct HalfMatrix {
    /// Rows of `stride` halves, two per u32 (the even column in the low 16 bits).
    pub packed: Vec<u32>,
    /// The offset c_i subtracted from row i (its minimum, rounded to f32).
    pub row_offset: Vec<f32>,
    /// D[i][j] = row_offset[i] + half[i][j] * scale (a power of two).
    pub scale: f32,
    /// Halves per row: n rounded up to [`COLUMNS_PER_GROUP`].
    pub stride: usize,
    rows: usize,
    cols: usize,
}

impl HalfMatrix {
    pub fn new(d: &DistanceMatrix) -> HalfMatrix {
        let stride = d.cols.next_multiple_of(COLUMNS_PER_GROUP);
        let row_offset: Vec<f32> = (0..d.rows)
            .into_par_iter()
            .map(|i| d.row(i).iter().copied().fold(f64::INFINITY, f64::min) as f32)
            .collect();
        let largest = (0..d.rows)
            .into_par_iter()
            .map(|i| d.row(i).iter().map(|&v| (v - f64::from(row_offset[i])).abs()).fold(0.0, f64::max))
            .reduce(|| 0.0, f64::max);
        let scale = if largest > 0.0 { 2f64.powi(largest.log2().ceil() as i32 - 15) } else { 1.0 };
        let mut packed = vec![0u32; d.rows * stride / 2];
        packed.par_chunks_mut(stride / 2).enumerate().for_each(|(i, row)| {
            let c = f64::from(row_offset[i]);
            let half = |j: usize| d.row(i).get(j).map_or(0, |&v| u32::from(f16_bits((v - c) / scale)));
            for (p, word) in row.iter_mut().enumerate() {
                *word = half(2 * p) | (half(2 * p + 1) << 16);
            }
        });
        HalfMatrix { packed, row_offset, scale: scale as f32, stride, rows: d.rows, cols: d.cols }
    }

    /// The matrix the GPU sees, in f64 (exact): the CPU twin of the f16 kernel runs on it.
    pub fn dequantised(&self) -> Result<DistanceMatrix> {
        let (stride, scale) = (self.stride, f64::from(self.scale));
        let data = (0..self.rows)
            .into_par_iter()
            .flat_map_iter(|i| {
                let c = f64::from(self.row_offset[i]);
                (0..self.cols).map(move |j| {
                    let word = self.packed[(i * stride + j) / 2];
                    c + f16_value((word >> (16 * (j % 2))) as u16) * scale
                })
            })
            .collect();
        DistanceMatrix::new(self.rows, self.cols, data)
    }
}

/// The IEEE half nearest to `v` (ties to even), for |v| < 65520 (the caller's scale keeps
/// |v| <= 2^15).
pub fn f16_bits(v: f64) -> u16 {
    let sign = if v.is_sign_negative() { 0x8000 } else { 0 };
    let a = v.abs();
    // Subnormal halves are whole multiples of 2^-24; the rounding up to 1024 of them lands
    // on the smallest normal's bits, as it should.
    if a < 2f64.powi(-14) {
        return sign | (a * 2f64.powi(24)).round_ties_even() as u16;
    }
    let exponent = a.log2().floor() as i32;
    // log2 may round across a power of two: keep the significand in [1024, 2048].
    let exponent = if a < 2f64.powi(exponent) { exponent - 1 } else { exponent };
    let significand = (a * 2f64.powi(10 - exponent)).round_ties_even() as u32;
    // Rounding up to 2048 carries into the exponent field, which is the right result.
    sign | (((exponent + 14) as u32) << 10).wrapping_add(significand) as u16
}

/// The value of an IEEE half.
pub fn f16_value(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let fraction = f64::from(bits & 0x3ff);
    sign * if exponent == 0 { fraction * 2f64.powi(-24) } else { (1024.0 + fraction) * 2f64.powi(exponent - 25) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every finite non-negative half is found again from its own value, and a value between
    /// two neighbours goes to the nearer (to the even one on a tie).
    #[test]
    fn f16_rounds_to_nearest_even() {
        for bits in 0u16..0x7bff {
            let v = f16_value(bits);
            assert_eq!(f16_bits(v), bits, "{v}");
            assert_eq!(f16_bits(-v), bits | 0x8000, "{v}");
            let next = f16_value(bits + 1);
            let mid = 0.5 * (v + next);
            let even = if bits % 2 == 0 { bits } else { bits + 1 };
            assert_eq!(f16_bits(mid), even, "tie between {v} and {next}");
            assert_eq!(f16_bits(v + 0.25 * (next - v)), bits);
            assert_eq!(f16_bits(v + 0.75 * (next - v)), bits + 1);
        }
    }

    /// Each entry of the dequantised matrix is within 2^-12 of its distance from the row's
    /// offset (plus the scale's subnormal step), odd n pads, and the offsets are row minima.
    #[test]
    fn half_matrix_round_trips_within_half_precision() {
        for (m, n) in [(7, 13), (3, 4), (1, 1)] {
            let d = crate::bench::matrix(m, n, 4);
            let h = HalfMatrix::new(&d);
            assert_eq!(h.stride % COLUMNS_PER_GROUP, 0);
            assert_eq!(h.packed.len(), m * h.stride / 2);
            let q = h.dequantised().unwrap();
            for i in 0..m {
                let c = f64::from(h.row_offset[i]);
                assert!((c - d.row(i).iter().copied().fold(f64::INFINITY, f64::min)).abs() <= c * 1e-7);
                for j in 0..n {
                    let err = (q.at(i, j) - d.at(i, j)).abs();
                    let bound = (d.at(i, j) - c).abs() * 2f64.powi(-11) + f64::from(h.scale) * 2f64.powi(-24);
                    assert!(err <= bound, "{m}x{n} ({i}, {j}): {err:e} > {bound:e}");
                }
            }
        }
    }
}
