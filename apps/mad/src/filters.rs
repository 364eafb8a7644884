//! The two frequency-domain filters of the metric, evaluated per FFT bin (unshifted order,
//! bin `(kr, kc)` of an `rows x cols` spectrum), so neither the CPU reference nor the GPU
//! ever stores a filter. `shaders/mad/mad_filters.glsl` evaluates the same formulas in f32.
//!
//! Both filters are defined in the release on an fftshift-ed grid: `make_csf` multiplies
//! `fftshift(fft2(x))` and the result is `ifftshift`-ed back; `gaborconvolve` builds its filter
//! centred and `fftshift`s it. For odd sizes these two shifts differ by one bin, and
//! `make_csf`'s grid sits half a bin off the integers for even sizes; both quirks are kept.

use crate::constants::*;
use std::f64::consts::PI;

/// Position of bin `k` after MATLAB's `fftshift` of a length-`n` axis
/// (`circshift(x, floor(n/2))`).
fn shifted(k: usize, n: usize) -> usize {
    (k + n / 2) % n
}

/// Index into a centred filter grid that MATLAB's `fftshift` moves to bin `k`.
fn unshifted_source(k: usize, n: usize) -> usize {
    (k + n.div_ceil(2)) % n
}

/// The contrast sensitivity function of `make_csf(M, N, 32)'` at bin `(kr, kc)`.
pub fn csf(kr: usize, kc: usize, rows: usize, cols: usize) -> f64 {
    // make_csf's meshgrid runs from -n/2+0.5 to n/2-0.5.
    let u = shifted(kr, rows) as f64 - rows as f64 / 2.0 + 0.5;
    let v = shifted(kc, cols) as f64 - cols as f64 / 2.0 + 0.5;
    csf_at(u, v, cols)
}

/// The CSF at the continuous grid position `(u, v)` of `make_csf`'s meshgrid (in bins of a
/// `cols`-wide image's spectrum): [`csf`] samples it at the bins, a tile of the image
/// ([`crate::tiled`]) between them.
pub fn csf_at(u: f64, v: f64, cols: usize) -> f64 {
    // After the transpose the first coordinate follows rows, the second columns, and both
    // are divided by the column count (`plane = (xplane + 1i*yplane)/y*2*nfreq` with y = N).
    let scale = 2.0 * CSF_NFREQ / cols as f64;
    let radius = (u * scale).hypot(v * scale);
    let angle = (v * scale).atan2(u * scale);
    let s = (1.0 - CSF_W) / 2.0 * (4.0 * angle).cos() + (1.0 + CSF_W) / 2.0;
    let f = radius / s;
    if f < CSF_PEAK_FREQ {
        CSF_PEAK_VALUE
    } else {
        CSF_GAIN * (CSF_OFFSET + CSF_SLOPE * f) * (-(CSF_SLOPE * f).powf(CSF_POWER)).exp()
    }
}

/// Where bin `k` of a length-`t` spectrum lies on `make_csf`'s meshgrid of a length-`n` image
/// axis (`t == n` gives [`csf`]'s own positions): at the same frequency in cycles per pixel,
/// half a bin up where `n` is even.
pub fn csf_position(k: usize, t: usize, n: usize) -> f64 {
    let cycles = (shifted(k, t) as f64 - (t / 2) as f64) / t as f64;
    n as f64 * cycles + if n.is_multiple_of(2) { 0.5 } else { 0.0 }
}

/// The log-Gabor filter of `gaborconvolve` for `scale` (0..5) and `orientation` (0..4) at
/// bin `(kr, kc)`.
pub fn log_gabor(kr: usize, kc: usize, rows: usize, cols: usize, scale: usize, orientation: usize) -> f64 {
    // The DC bin is where `radius(round(rows/2+1), round(cols/2+1))` lands after fftshift;
    // the release sets the filter to zero there.
    if kr == 0 && kc == 0 {
        return 0.0;
    }
    // x = (-cols/2 : cols/2-1)/(cols/2), y likewise over rows.
    let half_r = rows as f64 / 2.0;
    let half_c = cols as f64 / 2.0;
    let y = (unshifted_source(kr, rows) as f64 - half_r) / half_r;
    let x = (unshifted_source(kc, cols) as f64 - half_c) / half_c;
    log_gabor_at(y, x, scale, orientation)
}

/// The log-Gabor filter at the continuous position `(y, x)` of `gaborconvolve`'s grid
/// (normalised frequency, -1..1 across the spectrum): [`log_gabor`] samples it at the bins
/// (but for DC), a tile of the image ([`crate::tiled`]) between them.
pub fn log_gabor_at(y: f64, x: f64, scale: usize, orientation: usize) -> f64 {
    let radius = x.hypot(y);
    let wavelength = GABOR_MIN_WAVELENGTH * GABOR_MULT.powi(scale as i32);
    // fo = 1/wavelength; rfo = fo/0.5.
    let rfo = (1.0 / wavelength) / 0.5;
    let log_sigma = GABOR_SIGMA_ON_F.ln();
    // At radius 0 this is exp(-inf) = 0.
    let radial = ((radius.ln() - rfo.ln()).powi(2) / -(2.0 * log_sigma * log_sigma)).exp();
    // theta = atan2(-y, x); angular distance through sine and cosine differences.
    let theta = (-y).atan2(x);
    let (sin_t, cos_t) = theta.sin_cos();
    let angle = orientation as f64 * PI / GABOR_ORIENTATIONS as f64;
    let (sin_a, cos_a) = angle.sin_cos();
    let ds = sin_t * cos_a - cos_t * sin_a;
    let dc = cos_t * cos_a + sin_t * sin_a;
    let dtheta = ds.atan2(dc).abs();
    let theta_sigma = PI / GABOR_ORIENTATIONS as f64 / GABOR_DTHETA_ON_SIGMA;
    let spread = (-dtheta * dtheta / (2.0 * theta_sigma * theta_sigma)).exp();
    radial * spread
}

/// Where bin `k` of a length-`t` spectrum lies on `gaborconvolve`'s grid of a length-`n`
/// image axis (`t == n` gives [`log_gabor`]'s own positions): at the same frequency in
/// cycles per pixel, half a bin up where `n` is odd, and within the grid's -1..1.
pub fn log_gabor_position(k: usize, t: usize, n: usize) -> f64 {
    let cycles = (shifted(k, t) as f64 - (t / 2) as f64) / t as f64;
    let x = 2.0 * cycles + if n % 2 == 1 { 1.0 / n as f64 } else { 0.0 };
    if x >= 1.0 {
        x - 2.0
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csf_is_flat_at_low_frequencies_and_falls_off() {
        assert_eq!(csf(0, 0, 64, 64), CSF_PEAK_VALUE);
        // The Nyquist corner of a 512x512 spectrum lies far above the peak.
        assert!(csf(256, 256, 512, 512) < 0.05);
    }

    #[test]
    fn log_gabor_peaks_at_its_centre_frequency() {
        // Scale 0 has wavelength 3: centre at normalised radius 2/3 along orientation 0
        // (the positive x axis), i.e. column bin 2/3 * cols/2 for an even size.
        let (rows, cols) = (96, 96);
        let kc = 32;
        assert!((log_gabor(0, kc, rows, cols, 0, 0) - 1.0).abs() < 1e-12);
        // Orientation 2 lies pi/2 away, with an angular sigma of pi/6: exp(-(pi/2)^2 / (2 (pi/6)^2)) = exp(-4.5).
        assert!((log_gabor(0, kc, rows, cols, 0, 2) - (-4.5f64).exp()).abs() < 1e-12);
        assert_eq!(log_gabor(0, 0, rows, cols, 3, 1), 0.0);
    }

    #[test]
    fn positions_of_a_whole_spectrum_are_its_bins() {
        for n in [34, 35, 96, 97] {
            for k in 0..n {
                for m in [40, 41] {
                    assert!((csf(k, 3, n, m) - csf_at(csf_position(k, n, n), csf_position(3, m, m), m)).abs() < 1e-12);
                    if k != 0 {
                        let at = log_gabor_at(log_gabor_position(k, n, n), log_gabor_position(0, m, m), 2, 1);
                        assert!((log_gabor(k, 0, n, m, 2, 1) - at).abs() < 1e-12, "{n} {k} {m}");
                    }
                }
            }
        }
    }
}
