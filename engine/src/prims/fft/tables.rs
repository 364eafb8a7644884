//! Host-side constants of the GPU FFT, computed in f64 and stored as f32: twiddle factors,
//! Bluestein chirps and the FFT of the Bluestein filter. Every value is computed directly
//! from its angle (no recurrences), so each is within f32 rounding of the exact value.

use std::f64::consts::PI;

use rustfft::num_complex::Complex64;
use rustfft::FftPlanner;

/// FFT size used for a line of length `n`: `n` itself for powers of two, else the smallest
/// power of two that holds Bluestein's linear convolution (`2n - 1` values).
pub(super) fn fft_size(n: usize) -> usize {
    if n.is_power_of_two() {
        n
    } else {
        (2 * n - 1).next_power_of_two()
    }
}

fn to_f32(v: Complex64) -> [f32; 2] {
    [v.re as f32, v.im as f32]
}

/// `exp(-2 pi i k / m)` for `k < m`.
pub(super) fn twiddles(m: usize) -> Vec<[f32; 2]> {
    (0..m).map(|k| to_f32(Complex64::from_polar(1.0, -2.0 * PI * k as f64 / m as f64))).collect()
}

/// Bluestein's chirp `exp(-pi i k^2 / n)` for `k < n`. `k^2` is reduced modulo `2n` in exact
/// integer arithmetic first, so the angle stays small and accurate for large `k`.
pub(super) fn chirp(n: usize) -> Vec<Complex64> {
    (0..n as u64)
        .map(|k| {
            let r = (k * k) % (2 * n as u64);
            Complex64::from_polar(1.0, -PI * r as f64 / n as f64)
        })
        .collect()
}

/// `FFT_m(b) / m` where `b[k] = b[m - k] = conj(chirp[k])` for `k < n` and 0 elsewhere: the
/// convolution filter of the forward transform, already divided by the `m` of the
/// unnormalised inverse FFT. The inverse transform uses its complex conjugate (the inverse
/// chirp is `conj(chirp)` and `FFT_+(conj b) = conj(FFT_-(b))`).
pub(super) fn bluestein_kernel(chirp: &[Complex64], m: usize) -> Vec<[f32; 2]> {
    let n = chirp.len();
    let mut b = vec![Complex64::new(0.0, 0.0); m];
    for (k, c) in chirp.iter().enumerate() {
        b[k] = c.conj();
        if k > 0 {
            b[m - k] = c.conj();
        }
    }
    debug_assert!(m >= 2 * n - 1);
    FftPlanner::<f64>::new().plan_fft_forward(m).process(&mut b);
    b.into_iter().map(|v| to_f32(v / m as f64)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_tables() {
        assert_eq!(fft_size(1), 1);
        assert_eq!(fft_size(512), 512);
        assert_eq!(fft_size(3), 8);
        assert_eq!(fft_size(1080), 4096);
        assert_eq!(fft_size(1920), 4096);
        let t = twiddles(8);
        assert!((t[2][0]).abs() < 1e-7 && (t[2][1] + 1.0).abs() < 1e-7, "W_8^2 = -i");
        // Chirp reduction: k^2 mod 2n gives the same angle as the direct formula.
        let c = chirp(7);
        let direct = Complex64::from_polar(1.0, -PI * 36.0 / 7.0);
        assert!((c[6] - direct).norm() < 1e-12);
    }
}
