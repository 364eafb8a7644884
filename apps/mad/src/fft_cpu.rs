//! The 2D FFT of the CPU reference (rustfft, rows then columns, rows in parallel). The
//! inverse is scaled by 1/(rows*cols), as MATLAB's `ifft2`.

use rayon::prelude::*;
use rustfft::num_complex::Complex64;
use rustfft::FftPlanner;

/// In-place 2D FFT of a row-major `rows x cols` array.
pub fn fft2(data: &mut [Complex64], rows: usize, cols: usize, inverse: bool) {
    let mut planner = FftPlanner::<f64>::new();
    let (row_fft, col_fft) = if inverse {
        (planner.plan_fft_inverse(cols), planner.plan_fft_inverse(rows))
    } else {
        (planner.plan_fft_forward(cols), planner.plan_fft_forward(rows))
    };
    data.par_chunks_mut(cols).for_each(|row| row_fft.process(row));
    let mut t = vec![Complex64::default(); rows * cols];
    t.par_chunks_mut(rows).enumerate().for_each(|(c, col)| {
        for (r, v) in col.iter_mut().enumerate() {
            *v = data[r * cols + c];
        }
        col_fft.process(col);
    });
    let scale = if inverse { 1.0 / (rows * cols) as f64 } else { 1.0 };
    data.par_chunks_mut(cols).enumerate().for_each(|(r, row)| {
        for (c, v) in row.iter_mut().enumerate() {
            *v = t[c * rows + r] * scale;
        }
    });
}
