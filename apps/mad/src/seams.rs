//! The log-Gabor filters' seams at the spectrum's edge, taken out of a tile's window and
//! added back exactly from whole rows and columns of the image ([`crate::tiled`]).
//!
//! `gaborconvolve` evaluates each filter `G(y, x)` on the grid `-1 .. 1 - 2/n` without
//! wrapping it, so the periodic spectrum the whole-image FFT multiplies jumps where `x`
//! (or `y`) runs from just under 1 back to -1. A jump makes the impulse response fall off as
//! 1/distance along the row (column) through each pixel, and the finest scales jump by up to
//! 0.8: no halo a tile can afford holds those tails. Split the filter into a part continuous
//! on the torus and three seam terms, with the ramps `s(x) = (x + 1) / 2` and
//! `t(y) = (y + 1) / 2` (each jumps by 1 across its edge):
//!
//! ```text
//! G = G2 + Jp(y) s(x) + Kp(x) t(y) + c s(x) t(y)
//! c     = G(1, 1) - G(1, -1) - G(-1, 1) + G(-1, -1)     (the corner's jump)
//! Jp(y) = G(y, 1) - G(y, -1) - c t(y)                   (the x edge's jump, continuous in y)
//! Kp(x) = G(1, x) - G(-1, x) - c s(x)                   (the y edge's jump, continuous in x)
//! ```
//!
//! `G2` is continuous across both edges, so its response is short and a tile's window
//! holds it. With `P = image * s` along whole rows and `Q = image * t` along whole columns
//! (1D FFTs of the whole image's lines, [`Seams::lines`]), `Jp s` is `P` filtered by `Jp`
//! along columns and `Kp t` is `Q` filtered by `Kp` along rows: `Jp` and `Kp` are smooth and
//! periodic, so their responses are short too. The corner term's response is the product of
//! the two ramps' 1/distance kernels `sigma(x) tau(y)`; it is kept exactly along the row and
//! column through each pixel (`sigma tau_n + sigma_n tau - sigma_n tau_n`, `_n` the kernels
//! within the halo, [`Seams::new`]) and dropped only in the four quadrants beyond the halo in
//! both directions, where it falls off as 1/(x y). Per bin of the window, with `F`, `F_P`,
//! `F_Q` the window's spectra of the image, `P` and `Q` and `S_n`, `T_n` those of the
//! truncated kernels:
//!
//! ```text
//! band = F A + F_P B + F_Q C
//! A = G - Jp s - Kp t - c s t - c S_n T_n,   B = Jp + c T_n,   C = Kp + c S_n
//! ```
//!
//! (on the whole image, with untruncated kernels, `A + s B + t C = G`.) On a 1024x768 scene
//! with a 128-pixel halo this takes scale 0's band magnitudes from 2.3e-2 (RMS, relative) off
//! the whole image's to 4e-5, and scale 1's from 1.5e-3 to 1e-5; the dropped quadrants are
//! 3e-4 of scale 0's diagonal bands at a 128-pixel halo, falling as 1/halo.

use engine::prims::fft::{Complex64, Direction, Fft2dCpu};
use rayon::prelude::*;

use crate::constants::{GABOR_ORIENTATIONS, GABOR_SCALES};
use crate::filters::{log_gabor_at, log_gabor_position};
use crate::input::GrayImage;
use crate::tiled::Window;
use crate::MadError;

/// The log-Gabor bands, scale-major (band = scale * orientations + orientation).
const BANDS: usize = GABOR_SCALES * GABOR_ORIENTATIONS;
/// Values per batch of lines [`Seams::lines`] transforms at once (16 MiB of complex f64).
const LINE_BATCH_VALUES: usize = 1 << 20;

/// The seam terms of every band for one tile window of one image size.
pub struct Seams {
    /// The whole image's size and the window's.
    image: (usize, usize),
    window: (usize, usize),
    /// `Jp` at the window's row bins, per band (`BANDS x rows`).
    jp: Vec<f64>,
    /// `Kp` at the window's column bins, per band (`BANDS x cols`).
    kp: Vec<f64>,
    /// `c` per band.
    corner: [f64; BANDS],
    /// The window's spectra of the ramps' kernels within the halo: `S_n` per column bin,
    /// `T_n` per row bin.
    sn: Vec<Complex64>,
    tn: Vec<Complex64>,
    /// The ramps at the window's bins: `s` per column bin, `t` per row bin.
    s: Vec<f64>,
    t: Vec<f64>,
    /// The ramps at the whole image's bins, for [`Seams::lines`].
    whole_s: Vec<f64>,
    whole_t: Vec<f64>,
}

/// The ramp `(z + 1) / 2` at the bins of a length-`t` spectrum of a length-`n` image axis.
fn ramp(t: usize, n: usize) -> Vec<f64> {
    (0..t).map(|k| (log_gabor_position(k, t, n) + 1.0) / 2.0).collect()
}

/// The window's spectrum (length `t`) of the ramp's kernel over a length-`n` image axis
/// (the inverse transform of [`ramp`]`(n, n)`), kept within `reach` pixels of its centre.
fn truncated_kernel(n: usize, t: usize, reach: usize) -> Result<Vec<Complex64>, MadError> {
    let mut kernel: Vec<Complex64> = ramp(n, n).into_iter().map(|v| Complex64::new(v, 0.0)).collect();
    Fft2dCpu::new(n, 1)?.process(&mut kernel, Direction::Inverse)?;
    // Distances -reach ..= reach, each residue of the axis (and of the window) once.
    let (mut lo, mut hi) = (reach.min(n / 2), reach.min((n - 1) / 2));
    if lo + hi >= t {
        (lo, hi) = (lo.min((t - 1) / 2), hi.min((t - 1) / 2));
    }
    let mut window = vec![Complex64::new(0.0, 0.0); t];
    for d in -(lo as isize)..=hi as isize {
        window[d.rem_euclid(t as isize) as usize] = kernel[d.rem_euclid(n as isize) as usize];
    }
    Fft2dCpu::new(t, 1)?.process(&mut window, Direction::Forward)?;
    Ok(window)
}

/// How far the ramps' kernels reach in a window of `t` pixels over an image axis of `n`: the
/// whole axis where the window holds it a whole number of times (its transform then sees the
/// whole image's spectrum, and the seams add up to the filter exactly), else the halo.
fn reach(n: usize, t: usize, halo: usize) -> usize {
    if t.is_multiple_of(n) {
        n
    } else {
        halo
    }
}

impl Seams {
    /// The seam terms for windows of `window` pixels (columns, rows) over a `image`-sized
    /// pair whose tiles have `halo` pixels around their blocks (the kernels' reach).
    pub fn new(image: (usize, usize), window: (usize, usize), halo: usize) -> Result<Seams, MadError> {
        let (ww, wh) = window;
        let y: Vec<f64> = (0..wh).map(|k| log_gabor_position(k, wh, image.1)).collect();
        let x: Vec<f64> = (0..ww).map(|k| log_gabor_position(k, ww, image.0)).collect();
        let (s, t) = (ramp(ww, image.0), ramp(wh, image.1));
        let mut corner = [0.0; BANDS];
        let (mut jp, mut kp) = (Vec::with_capacity(BANDS * wh), Vec::with_capacity(BANDS * ww));
        for (band, c) in corner.iter_mut().enumerate() {
            let g = |y: f64, x: f64| log_gabor_at(y, x, band / GABOR_ORIENTATIONS, band % GABOR_ORIENTATIONS);
            *c = g(1.0, 1.0) - g(1.0, -1.0) - g(-1.0, 1.0) + g(-1.0, -1.0);
            jp.extend(y.iter().zip(&t).map(|(&y, &t)| g(y, 1.0) - g(y, -1.0) - *c * t));
            kp.extend(x.iter().zip(&s).map(|(&x, &s)| g(1.0, x) - g(-1.0, x) - *c * s));
        }
        Ok(Seams {
            image,
            window,
            jp,
            kp,
            corner,
            sn: truncated_kernel(image.0, ww, reach(image.0, ww, halo))?,
            tn: truncated_kernel(image.1, wh, reach(image.1, wh, halo))?,
            s,
            t,
            whole_s: ramp(image.0, image.0),
            whole_t: ramp(image.1, image.1),
        })
    }

    /// The factors `[A, B, C]` of the image's, `P`'s and `Q`'s spectra at window bin
    /// `(kr, kc)` for `band`, given the filter's value `g` there.
    pub fn factors(&self, band: usize, kr: usize, kc: usize, g: f64) -> [Complex64; 3] {
        let (ww, wh) = self.window;
        let (jp, kp, c) = (self.jp[band * wh + kr], self.kp[band * ww + kc], self.corner[band]);
        let (s, t, sn, tn) = (self.s[kc], self.t[kr], self.sn[kc], self.tn[kr]);
        let a = Complex64::new(g - jp * s - kp * t - c * s * t, 0.0) - c * sn * tn;
        [a, jp + c * tn, kp + c * sn]
    }

    /// The ramps `s` and `t` at the whole image's bins, which [`Seams::lines_into`]
    /// multiplies the whole rows' and columns' spectra by.
    pub(crate) fn whole_ramps(&self) -> (&[f64], &[f64]) {
        (&self.whole_s, &self.whole_t)
    }

    /// The table `gabor_apply.comp` reads (f32): `Jp` (bands x rows), `Kp` (bands x
    /// columns), `c` (bands), `S_n` (columns, complex) and `T_n` (rows, complex).
    pub fn table(&self) -> Vec<f32> {
        let complex = |v: &[Complex64]| v.iter().flat_map(|c| [c.re as f32, c.im as f32]).collect::<Vec<_>>();
        let mut out: Vec<f32> = self.jp.iter().chain(&self.kp).chain(&self.corner).map(|&v| v as f32).collect();
        out.extend(complex(&self.sn));
        out.extend(complex(&self.tn));
        out
    }

    /// `P` and `Q` of `image` less `mean` over `window`, through `convert`, into `p` and `q`
    /// (row-major, the window's size): whole rows (columns) of the image transformed,
    /// multiplied by the ramp and transformed back, cut to the window's columns (rows).
    pub(crate) fn lines_into<T: Send>(
        &self,
        image: &GrayImage,
        mean: f64,
        window: &Window,
        (p, q): (&mut [T], &mut [T]),
        convert: impl Fn(Complex64) -> T + Sync,
    ) -> Result<(), MadError> {
        let (w, h) = self.image;
        let (ww, wh) = self.window;
        assert!(p.len() == ww * wh && q.len() == ww * wh, "lines of the window's size");
        let (ox, oy) = window.origin;
        let columns: Vec<usize> = (0..ww).map(|i| (ox + i as isize).rem_euclid(w as isize) as usize).collect();
        let rows: Vec<usize> = (0..wh).map(|j| (oy + j as isize).rem_euclid(h as isize) as usize).collect();
        ramped_lines(
            w,
            wh,
            &self.whole_s,
            |j, line| {
                let y = rows[j];
                for (v, &x) in line.iter_mut().zip(&image.values[y * w..(y + 1) * w]) {
                    *v = Complex64::new(x - mean, 0.0);
                }
            },
            |first, lines| {
                let out = &mut p[first * ww..first * ww + lines.len() / w * ww];
                out.par_chunks_mut(ww).zip(lines.par_chunks(w)).for_each(|(out, line)| {
                    for (v, &x) in out.iter_mut().zip(&columns) {
                        *v = convert(line[x]);
                    }
                });
            },
        )?;
        ramped_lines(
            h,
            ww,
            &self.whole_t,
            |i, line| {
                let x = columns[i];
                for (y, v) in line.iter_mut().enumerate() {
                    *v = Complex64::new(image.values[y * w + x] - mean, 0.0);
                }
            },
            |first, lines| {
                q.par_chunks_mut(ww).zip(&rows).for_each(|(out, &y)| {
                    for (v, line) in out[first..].iter_mut().zip(lines.chunks(h)) {
                        *v = convert(line[y]);
                    }
                });
            },
        )
    }
}

/// For each of `count` lines of length `len`: `fill` writes it, it is multiplied by `ramp`
/// in frequency, and `keep` reads the results, a batch of lines (from the `first`th) at a
/// time. Batches of lines are transformed in parallel.
fn ramped_lines(
    len: usize,
    count: usize,
    ramp: &[f64],
    fill: impl Fn(usize, &mut [Complex64]) + Sync,
    mut keep: impl FnMut(usize, &[Complex64]),
) -> Result<(), MadError> {
    let fft = Fft2dCpu::new(len, 1)?;
    let batch = (LINE_BATCH_VALUES / len).clamp(1, count.max(1));
    let mut lines = vec![Complex64::new(0.0, 0.0); batch * len];
    for first in (0..count).step_by(batch) {
        let n = batch.min(count - first);
        let lines = &mut lines[..n * len];
        lines.par_chunks_mut(len).enumerate().for_each(|(k, line)| fill(first + k, line));
        fft.process(lines, Direction::Forward)?;
        lines.par_chunks_mut(len).for_each(|line| line.iter_mut().zip(ramp).for_each(|(v, &r)| *v *= r));
        fft.process(lines, Direction::Inverse)?;
        keep(first, lines);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filters::log_gabor;
    use crate::grid::Cells;
    use crate::synth::scene;

    /// Relative RMS distance of a tile's band magnitudes from the whole image's over the
    /// tile's own pixels, for the two finest scales' bands, with and without the seams.
    fn tile_band_errors(seams_on: bool) -> f64 {
        let (w, h) = (420, 344);
        let image = scene(w, h, 7);
        let mean = image.values.iter().sum::<f64>() / (w * h) as f64;
        let mut whole: Vec<Complex64> = image.values.iter().map(|&v| Complex64::new(v - mean, 0.0)).collect();
        let whole_fft = Fft2dCpu::new(w, h).unwrap();
        whole_fft.process(&mut whole, Direction::Forward).unwrap();
        // Cells 20..36 x 30..46 (64 pixels a side), a 96-pixel halo, windows of 260x260.
        let (halo, size) = (96, (260, 260));
        let cells = Cells { x0: 20, y0: 30, x1: 36, y1: 46 };
        let window = Window::around(&cells, halo, size);
        let seams = Seams::new((w, h), size, halo).unwrap();
        let mut tile = window.gather(&image, |v| v - mean);
        let (mut p, mut q) = (tile.clone(), tile.clone());
        seams.lines_into(&image, mean, &window, (&mut p, &mut q), |v| v).unwrap();
        let fft = Fft2dCpu::new(size.0, size.1).unwrap();
        for data in [&mut tile, &mut p, &mut q] {
            fft.process(data, Direction::Forward).unwrap();
        }
        let mut worst = 0.0f64;
        for band in 0..2 * GABOR_ORIENTATIONS {
            let (scale, orientation) = (band / GABOR_ORIENTATIONS, band % GABOR_ORIENTATIONS);
            let mut reference: Vec<Complex64> = whole.clone();
            crate::cpu::apply(&mut reference, h, w, |kr, kc| log_gabor(kr, kc, h, w, scale, orientation));
            whole_fft.process(&mut reference, Direction::Inverse).unwrap();
            let mut band_tile: Vec<Complex64> = (0..size.0 * size.1)
                .map(|i| {
                    let (kr, kc) = (i / size.0, i % size.0);
                    let y = log_gabor_position(kr, size.1, h);
                    let x = log_gabor_position(kc, size.0, w);
                    let g = log_gabor_at(y, x, scale, orientation);
                    let [a, b, c] =
                        if seams_on { seams.factors(band, kr, kc, g) } else { [g.into(), 0.0.into(), 0.0.into()] };
                    tile[i] * a + p[i] * b + q[i] * c
                })
                .collect();
            fft.process(&mut band_tile, Direction::Inverse).unwrap();
            let (mut diff, mut norm) = (0.0, 0.0);
            for j in halo..halo + 64 {
                for i in halo..halo + 64 {
                    let ours = band_tile[j * size.0 + i].norm();
                    let (x, y) = (4 * cells.x0 + i - halo, 4 * cells.y0 + j - halo);
                    let theirs = reference[y * w + x].norm();
                    diff += (ours - theirs).powi(2);
                    norm += theirs * theirs;
                }
            }
            worst = worst.max((diff / norm).sqrt());
        }
        worst
    }

    /// The seams are what make a tile's finest bands the whole image's: their magnitudes
    /// within 2e-4 (RMS, relative) with a 96-pixel halo (measured 1.1e-4 at worst, scale 0
    /// across the rows, whose remainder `G2` is continuous but has a kink at the edge, so its
    /// tail falls off as 1/halo), against 1.2e-2 to 2.8e-2 for scale 0 without them.
    #[test]
    fn tiles_with_seams_match_the_whole_images_finest_bands() {
        let (with, without) = (tile_band_errors(true), tile_band_errors(false));
        assert!(with < 2e-4, "with the seams: {with:.2e}");
        assert!(without > 1e-2, "without the seams: {without:.2e}");
    }

    /// With the window the whole image and kernels reaching all of it, `A + s B + t C` is
    /// the filter itself at every bin of every band (odd and even sides).
    #[test]
    fn the_terms_add_up_to_the_filter() {
        for (w, h) in [(24, 17), (15, 20)] {
            let seams = Seams::new((w, h), (w, h), w.max(h)).unwrap();
            for band in 0..BANDS {
                for kr in 0..h {
                    for kc in 0..w {
                        if kr == 0 && kc == 0 {
                            continue;
                        }
                        let g = log_gabor(kr, kc, h, w, band / GABOR_ORIENTATIONS, band % GABOR_ORIENTATIONS);
                        let [a, b, c] = seams.factors(band, kr, kc, g);
                        let sum = a + b * seams.s[kc] + c * seams.t[kr];
                        assert!((sum - g).norm() < 1e-12, "band {band} bin ({kr}, {kc}): {sum} against {g}");
                    }
                }
            }
        }
    }

    /// The ramps' kernels within the whole axis are the ramps again.
    #[test]
    fn untruncated_kernels_are_the_ramps() {
        for n in [16, 17] {
            let spectrum = truncated_kernel(n, n, n).unwrap();
            for (k, v) in spectrum.iter().enumerate() {
                let r = (log_gabor_position(k, n, n) + 1.0) / 2.0;
                assert!((v - r).norm() < 1e-12, "{n} {k}: {v} against {r}");
            }
        }
    }
}
