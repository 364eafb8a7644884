//! The appearance stage (`lo_index`): the 20 log-Gabor bands of both images, the block
//! statistics of their magnitudes and the weighted differences summed into the cells, and
//! d_appear (the twin of `shaders/mad/gabor_apply.comp`, `appear_blocks.comp` and
//! `sum_bands.comp`, recorded by [`crate::gpu::appearance`]).

use engine::prims::fft::{Complex64, Direction, Fft2dCpu};
use rayon::prelude::*;

use super::{cropped_rms, window_moments};
use crate::constants::*;
use crate::filters::log_gabor;
use crate::grid::Grid;
use crate::input::GrayImage;
use crate::MadError;

/// `ical_stat`: standard deviation (divisor 255), skewness and kurtosis (divisor 256, zero
/// where the block is flat) of one block.
pub(crate) fn appearance_block_stats(magnitude: &[f64], width: usize, x0: usize, y0: usize) -> [f64; 3] {
    let m = window_moments(magnitude, width, x0, y0, BLOCK);
    let n = (BLOCK * BLOCK) as f64;
    let std = (m[1] / (n - 1.0)).sqrt();
    let biased = (m[1] / n).sqrt();
    if biased == 0.0 {
        return [std, 0.0, 0.0];
    }
    [std, (m[2] / n) / biased.powi(3), (m[3] / n) / biased.powi(4)]
}

/// `ical_stat`'s statistics of every block of one image's band magnitudes.
fn band_stats(magnitude: &[f64], grid: &Grid) -> Vec<[f64; 3]> {
    (0..grid.blocks())
        .into_par_iter()
        .map(|b| {
            appearance_block_stats(magnitude, grid.width, STRIDE * (b % grid.blocks_x), STRIDE * (b / grid.blocks_x))
        })
        .collect()
}

/// Adds the weighted differences of one scale's block statistics to the cells.
fn add_differences(reference: &[[f64; 3]], distorted: &[[f64; 3]], scale: usize, cells: &mut [f64]) {
    let weight = scale_weight(scale);
    for ((cell, r), d) in cells.iter_mut().zip(reference).zip(distorted) {
        *cell += weight * ((r[0] - d[0]).abs() + SKEW_WEIGHT * (r[1] - d[1]).abs() + (r[2] - d[2]).abs());
    }
}

/// Adds one log-Gabor band's weighted statistics differences to the cells: `magnitude` holds
/// the band's magnitudes of the reference, then of the distorted image (the twin of
/// `shaders/mad/appear_blocks.comp` and `sum_bands.comp`; the GPU's tests compare with it).
#[cfg(test)]
pub(crate) fn add_band_cells(magnitude: &[f64], grid: &Grid, scale: usize, cells: &mut [f64]) {
    let n = grid.pixels();
    let (r, d) = (band_stats(&magnitude[..n], grid), band_stats(&magnitude[n..2 * n], grid));
    add_differences(&r, &d, scale, cells);
}

/// `lo_index`: d_appear and the appearance map (per cell, expanded to pixels).
///
/// Both images' spectra come from one complex transform of `reference + i distorted`
/// (`F_r(k) = (Z(k) + conj Z(-k)) / 2`, `F_d(k) = (Z(k) - conj Z(-k)) / 2i`), and each band is
/// taken one image at a time, so the stage holds one spectrum, one band and its transform's
/// buffer, the band's filter and one magnitude (64 bytes a pixel besides the inputs) where
/// two of each took 112.
pub(super) fn appearance(
    reference: &GrayImage,
    distorted: &GrayImage,
    grid: &Grid,
    fft: &Fft2dCpu,
) -> Result<(f64, Vec<f64>), MadError> {
    let (w, h) = (grid.width, grid.height);
    let n = grid.pixels();
    let mut z: Vec<Complex64> =
        reference.values.par_iter().zip(&distorted.values).map(|(&r, &d)| Complex64::new(r, d)).collect();
    fft.process(&mut z, Direction::Forward)?;
    // The bin of frequency -k for bin k of a length-n axis.
    let negated = |k: usize, n: usize| (n - k) % n;
    let mut band = vec![Complex64::new(0.0, 0.0); n];
    let (mut filter, mut magnitude) = (vec![0.0; n], vec![0.0; n]);
    let mut cells = vec![0.0; grid.blocks()];
    for scale in 0..GABOR_SCALES {
        for orientation in 0..GABOR_ORIENTATIONS {
            filter.par_chunks_mut(w).enumerate().for_each(|(kr, row)| {
                row.iter_mut().enumerate().for_each(|(kc, g)| *g = log_gabor(kr, kc, h, w, scale, orientation))
            });
            let mut stats = Vec::with_capacity(2);
            for image in 0..2 {
                band.par_chunks_mut(w).enumerate().for_each(|(kr, row)| {
                    let mirrored = &z[negated(kr, h) * w..][..w];
                    for (kc, v) in row.iter_mut().enumerate() {
                        let (at, opposite) = (z[kr * w + kc], mirrored[negated(kc, w)].conj());
                        let spectrum = if image == 0 {
                            (at + opposite) * 0.5
                        } else {
                            (at - opposite) * Complex64::new(0.0, -0.5)
                        };
                        *v = spectrum * filter[kr * w + kc];
                    }
                });
                fft.process(&mut band, Direction::Inverse)?;
                magnitude.par_iter_mut().zip(&band).for_each(|(m, c)| *m = c.norm());
                stats.push(band_stats(&magnitude, grid));
            }
            add_differences(&stats[0], &stats[1], scale, &mut cells);
        }
    }
    drop((z, band, filter, magnitude));
    let map: Vec<f64> = (0..n).map(|i| grid.cell_of(i % w, i / w).map_or(0.0, |b| cells[b])).collect();
    Ok((cropped_rms(&map, grid), map))
}
