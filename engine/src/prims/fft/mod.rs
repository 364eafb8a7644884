//! 2D FFTs of batches of complex images: the GPU plan [`Fft2d`] and its CPU reference
//! [`Fft2dCpu`] / [`fft2d_cpu`] (rustfft in f64, rayon).
//!
//! Conventions shared by both:
//! - data is a stack of `batch` images, each `height` rows of `width` complex values, row
//!   major: element `(b, y, x)` is at `b*width*height + y*width + x`; on the GPU a complex
//!   value is `[re, im]` as `[f32; 2]` (a `vec2` in GLSL);
//! - [`Direction::Forward`] computes `X[k] = sum_n x[n] exp(-2 pi i k.n / N)` (no scaling);
//!   [`Direction::Inverse`] uses `exp(+2 pi i ...)` and scales by `1 / (width*height)`, so a
//!   forward then inverse transform returns the input (MATLAB's `fft2` / `ifft2`).
//!
//! Any size works: line lengths whose FFT fits in one workgroup's shared memory in one pass
//! per axis: powers of two up to 4096, lengths `2^a 3^b 5^c` up to 6144 (48 KiB) by a
//! mixed-radix FFT (`mixed.rs`), other lengths up to 2048 by Bluestein's chirp-z algorithm on
//! a power-of-two FFT of at least `2n - 1`; longer lines by a four-step decomposition into
//! two or three passes (up to 16M-point FFTs). See `gpu.rs` for the kernel layout.

mod cpu;
mod gpu;
mod mixed;
mod plan;
mod tables;
#[cfg(test)]
mod tests;

pub use cpu::{fft2d_cpu, Fft2dCpu};
pub use gpu::Fft2d;
pub use plan::{FftConfig, FFT_COLUMNS, FFT_ROW_INVOCATIONS, FFT_VALUES};
pub use rustfft::num_complex::Complex64;

/// The size of the FFT a line of `n` values takes in a workgroup's shared memory: `n` for
/// powers of two and for `2^a 3^b 5^c` (mixed radix), else Bluestein's power of two
/// `>= 2n - 1`. Callers sizing their work by the engine's column grouping use it (a column
/// pass holds as many columns per workgroup as `8 * size` bytes fit in shared memory).
pub fn line_fft_size(n: usize) -> usize {
    if mixed::radices(n).is_some() {
        n
    } else {
        tables::fft_size(n)
    }
}

/// Which way to transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `exp(-2 pi i ...)`, unscaled.
    Forward,
    /// `exp(+2 pi i ...)`, scaled by `1 / (width*height)`.
    Inverse,
}
