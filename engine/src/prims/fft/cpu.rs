//! CPU reference 2D FFT in f64: rustfft on every row in parallel, then the columns as rows of
//! a transposed copy (cache-friendly blocked transposes, also in parallel), then back.

use std::sync::Arc;

use rayon::prelude::*;
use rustfft::num_complex::Complex64;
use rustfft::{Fft, FftPlanner};

use super::Direction;
use crate::error::{EngineError, Result};

/// Rows (or columns) handed to one rayon task, so that small lines do not cost one task each.
const VALUES_PER_TASK: usize = 1 << 14;
/// Columns transposed together: each source row segment read is this many values long.
const TRANSPOSE_BLOCK: usize = 16;

/// A reusable CPU 2D FFT plan for `width x height` images (any size, any batch).
pub struct Fft2dCpu {
    width: usize,
    height: usize,
    /// Forward and inverse plans for the rows (length `width`) and the columns.
    rows: [Arc<dyn Fft<f64>>; 2],
    cols: [Arc<dyn Fft<f64>>; 2],
}

impl Fft2dCpu {
    pub fn new(width: usize, height: usize) -> Result<Fft2dCpu> {
        if width == 0 || height == 0 {
            return Err(EngineError::InvalidInput(format!("FFT of an empty {width}x{height} image")));
        }
        let mut planner = FftPlanner::<f64>::new();
        Ok(Fft2dCpu {
            width,
            height,
            rows: [planner.plan_fft_forward(width), planner.plan_fft_inverse(width)],
            cols: [planner.plan_fft_forward(height), planner.plan_fft_inverse(height)],
        })
    }

    /// Transforms every image of `data` (a whole number of `width x height` images) in place;
    /// the inverse is scaled by `1 / (width*height)`.
    pub fn process(&self, data: &mut [Complex64], direction: Direction) -> Result<()> {
        let (w, h) = (self.width, self.height);
        if !data.len().is_multiple_of(w * h) {
            return Err(EngineError::InvalidInput(format!(
                "FFT input of {} values is not a whole number of {w}x{h} images",
                data.len()
            )));
        }
        let d = match direction {
            Direction::Forward => 0,
            Direction::Inverse => 1,
        };
        let scale = if direction == Direction::Inverse { 1.0 / (w * h) as f64 } else { 1.0 };
        lines_in_parallel(data, w, &self.rows[d]);
        if h > 1 {
            let mut t = vec![Complex64::new(0.0, 0.0); data.len()];
            for (src, dst) in data.chunks(w * h).zip(t.chunks_mut(w * h)) {
                transpose(src, dst, w, h, 1.0);
            }
            lines_in_parallel(&mut t, h, &self.cols[d]);
            for (src, dst) in t.chunks(w * h).zip(data.chunks_mut(w * h)) {
                transpose(src, dst, h, w, scale);
            }
        } else if scale != 1.0 {
            data.par_iter_mut().for_each(|v| *v *= scale);
        }
        Ok(())
    }
}

/// One-shot CPU 2D FFT of `data` (a whole number of `width x height` images), in place.
pub fn fft2d_cpu(data: &mut [Complex64], width: usize, height: usize, direction: Direction) -> Result<()> {
    Fft2dCpu::new(width, height)?.process(data, direction)
}

/// Transforms consecutive lines of length `len` of `data` in parallel.
fn lines_in_parallel(data: &mut [Complex64], len: usize, fft: &Arc<dyn Fft<f64>>) {
    if len == 1 {
        return;
    }
    let per_task = len * (VALUES_PER_TASK / len).max(1);
    data.par_chunks_mut(per_task).for_each_init(
        || vec![Complex64::new(0.0, 0.0); fft.get_inplace_scratch_len()],
        |scratch, chunk| fft.process_with_scratch(chunk, scratch),
    );
}

/// `dst` (`w` rows of `h`) = `scale` times the transpose of `src` (`h` rows of `w`), in
/// parallel over blocks of destination rows.
fn transpose(src: &[Complex64], dst: &mut [Complex64], w: usize, h: usize, scale: f64) {
    dst.par_chunks_mut(h * TRANSPOSE_BLOCK).enumerate().for_each(|(block, out)| {
        let x0 = block * TRANSPOSE_BLOCK;
        let cols = out.len() / h;
        for y in 0..h {
            let row = &src[y * w + x0..y * w + x0 + cols];
            for (dx, v) in row.iter().enumerate() {
                out[dx * h + y] = *v * scale;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::f64::consts::PI;

    /// The 2D DFT straight from its definition, O((wh)^2).
    fn naive_dft2d(data: &[Complex64], w: usize, h: usize, sign: f64) -> Vec<Complex64> {
        let mut out = vec![Complex64::new(0.0, 0.0); w * h];
        for (ky, kx) in (0..h).flat_map(|ky| (0..w).map(move |kx| (ky, kx))) {
            for (y, x) in (0..h).flat_map(|y| (0..w).map(move |x| (y, x))) {
                let angle = sign * 2.0 * PI * ((kx * x) as f64 / w as f64 + (ky * y) as f64 / h as f64);
                out[ky * w + kx] += data[y * w + x] * Complex64::from_polar(1.0, angle);
            }
        }
        out
    }

    #[test]
    fn cpu_reference_matches_the_definition() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for (w, h, batch) in [(1, 1, 1), (5, 3, 2), (4, 4, 1), (17, 6, 1), (1, 9, 2), (33, 20, 1)] {
            let input: Vec<Complex64> = (0..w * h * batch)
                .map(|_| Complex64::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)))
                .collect();
            let mut data = input.clone();
            fft2d_cpu(&mut data, w, h, Direction::Forward).unwrap();
            for b in 0..batch {
                let want = naive_dft2d(&input[b * w * h..(b + 1) * w * h], w, h, -1.0);
                for (g, v) in data[b * w * h..].iter().zip(&want) {
                    assert!((g - v).norm() < 1e-9 * (w * h) as f64, "{w}x{h}: {g} vs {v}");
                }
            }
            fft2d_cpu(&mut data, w, h, Direction::Inverse).unwrap();
            for (g, v) in data.iter().zip(&input) {
                assert!((g - v).norm() < 1e-12, "{w}x{h} round trip: {g} vs {v}");
            }
        }
        assert!(fft2d_cpu(&mut [Complex64::new(0.0, 0.0); 5], 2, 2, Direction::Forward).is_err());
        assert!(Fft2dCpu::new(0, 3).is_err());
    }
}
