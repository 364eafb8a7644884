//! The appearance stage (`lo_index`): the 20 log-Gabor bands of both images, the block
//! statistics of their magnitudes and the weighted differences summed into the cells, and
//! d_appear (the twin of `shaders/mad/gabor_apply.comp`, `appear_blocks.comp` and
//! `sum_bands.comp`, recorded by [`crate::gpu::appearance`]).

use engine::prims::fft::{Direction, Fft2dCpu};
use rayon::prelude::*;

use super::{apply, cropped_rms, spectra, window_moments};
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

/// Adds one log-Gabor band's weighted statistics differences to the cells: `magnitude` holds
/// the band's magnitudes of the reference, then of the distorted image (the twin of
/// `shaders/mad/appear_blocks.comp` and `sum_bands.comp`).
pub(crate) fn add_band_cells(magnitude: &[f64], grid: &Grid, scale: usize, cells: &mut [f64]) {
    let n = grid.pixels();
    let stats = |image: &[f64]| -> Vec<[f64; 3]> {
        (0..grid.blocks())
            .into_par_iter()
            .map(|b| {
                appearance_block_stats(image, grid.width, STRIDE * (b % grid.blocks_x), STRIDE * (b / grid.blocks_x))
            })
            .collect()
    };
    let (r, d) = (stats(&magnitude[..n]), stats(&magnitude[n..2 * n]));
    let weight = scale_weight(scale);
    for ((cell, r), d) in cells.iter_mut().zip(r).zip(d) {
        *cell += weight * ((r[0] - d[0]).abs() + SKEW_WEIGHT * (r[1] - d[1]).abs() + (r[2] - d[2]).abs());
    }
}

/// `lo_index`: d_appear and the appearance map (per cell, expanded to pixels).
pub(super) fn appearance(
    reference: &GrayImage,
    distorted: &GrayImage,
    grid: &Grid,
    fft: &Fft2dCpu,
) -> Result<(f64, Vec<f64>), MadError> {
    let (w, h) = (grid.width, grid.height);
    let n = grid.pixels();
    let both = spectra(&[&reference.values, &distorted.values], fft)?;
    let mut cells = vec![0.0; grid.blocks()];
    for scale in 0..GABOR_SCALES {
        for orientation in 0..GABOR_ORIENTATIONS {
            let mut band = both.clone();
            apply(&mut band, h, w, |kr, kc| log_gabor(kr, kc, h, w, scale, orientation));
            fft.process(&mut band, Direction::Inverse)?;
            let magnitude: Vec<f64> = band.par_iter().map(|c| c.norm()).collect();
            add_band_cells(&magnitude, grid, scale, &mut cells);
        }
    }
    let map: Vec<f64> = (0..n).map(|i| grid.cell_of(i % w, i / w).map_or(0.0, |b| cells[b])).collect();
    Ok((cropped_rms(&map, grid), map))
}
