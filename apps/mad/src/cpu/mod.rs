//! The CPU reference of the whole metric in f64 (rustfft, rayon): the correctness oracle
//! for the GPU path and the benchmark baseline. Each step re-expresses one piece of the
//! release (`MAD_index.m`, `ical_std.c`, `ical_stat.c`); the constants and their sources
//! are in [`crate::constants`], the filters in [`crate::filters`], the block layout in
//! [`crate::grid`].

pub(crate) mod appearance;
pub(crate) mod detection;
pub mod tiled;

use engine::prims::fft::{Complex64, Direction, Fft2dCpu};
use rayon::prelude::*;

use crate::grid::Grid;
use crate::input::{check_pair, GrayImage};
use crate::{MadError, Maps, Scores};
pub use detection::visibility;

/// Bytes per pixel the reference holds at its peak, in the appearance stage: the two f64
/// gray inputs (16), the detection map kept for the maps (8), one complex spectrum of both
/// images packed (16), one band of one image (16) and the transpose buffer its FFT
/// allocates (16), the band's filter (8) and magnitudes (8), and the block statistics (3).
/// The detection stage, one image at a time, peaks lower.
pub(crate) const PEAK_BYTES_PER_PIXEL: u64 = 92;

/// Whether the whole-image path scores a `width x height` pair within the memory budget
/// (`--max-memory`); where it does not, [`score`] tiles the pair ([`crate::tiled`]).
pub fn whole_fits(width: u64, height: u64) -> bool {
    let bytes = width.checked_mul(height).and_then(|p| p.checked_mul(PEAK_BYTES_PER_PIXEL)).unwrap_or(u64::MAX);
    bytes <= kit::budget::get()
}

/// Refuses a `width x height` pair that cannot be scored within the memory budget
/// (`--max-memory`), whole or in tiles, before anything is allocated for it.
pub fn check_budget(width: u64, height: u64) -> Result<(), MadError> {
    crate::cpu::tiled::check_cpu(width, height, false)
}

/// Scores one pair and returns the detection and appearance maps: over the whole image
/// where that fits the memory budget, else in tiles ([`crate::tiled`]).
pub fn score(reference: &GrayImage, distorted: &GrayImage) -> Result<(Scores, Maps), MadError> {
    let (scores, maps) = score_with(reference, distorted, true)?;
    Ok((scores, maps.expect("maps were asked for")))
}

/// Scores one pair, with its maps when asked for: over the whole image where that fits the
/// memory budget, else in tiles ([`crate::tiled`]).
pub fn score_with(
    reference: &GrayImage,
    distorted: &GrayImage,
    maps: bool,
) -> Result<(Scores, Option<Maps>), MadError> {
    check_pair(reference, distorted)?;
    let (w, h) = (reference.width as u64, reference.height as u64);
    if whole_fits(w, h) {
        let (scores, m) = score_whole(reference, distorted)?;
        return Ok((scores, maps.then_some(m)));
    }
    let plan = crate::cpu::tiled::plan_cpu(w, h, maps)?;
    crate::cpu::tiled::score_cpu(reference, distorted, &plan, maps)
}

/// Scores one pair over the whole image (however large) and returns its maps.
pub fn score_whole(reference: &GrayImage, distorted: &GrayImage) -> Result<(Scores, Maps), MadError> {
    check_pair(reference, distorted)?;
    let grid = Grid::new(reference.width, reference.height);
    let fft = Fft2dCpu::new(grid.width, grid.height)?;
    let (detection, detection_map) = detection::detection(reference, distorted, &grid, &fft)?;
    let (appearance, appearance_map) = appearance::appearance(reference, distorted, &grid, &fft)?;
    let scores = Scores::combine(detection, appearance);
    let maps = Maps::new(grid.width, grid.height, detection_map, appearance_map, scores.alpha);
    Ok((scores, maps))
}

/// Sum of `values` over the `size x size` window at `(x0, y0)` and its central moments
/// 2, 3 and 4 (two passes, as the C helpers do).
pub(crate) fn window_moments(values: &[f64], width: usize, x0: usize, y0: usize, size: usize) -> [f64; 4] {
    let rows = || (y0..y0 + size).flat_map(|y| values[y * width + x0..y * width + x0 + size].iter().copied());
    let mean = rows().sum::<f64>() / (size * size) as f64;
    let mut m = [mean, 0.0, 0.0, 0.0];
    for v in rows() {
        let d = v - mean;
        m[1] += d * d;
        m[2] += d * d * d;
        m[3] += d * d * d * d;
    }
    m
}

/// The spectra of a stack of real images (each `rows x cols`).
pub(crate) fn spectra(images: &[&[f64]], fft: &Fft2dCpu) -> Result<Vec<Complex64>, MadError> {
    let mut s: Vec<Complex64> = images.iter().flat_map(|i| i.iter().map(|&v| Complex64::new(v, 0.0))).collect();
    fft.process(&mut s, Direction::Forward)?;
    Ok(s)
}

/// Multiplies every spectrum of a stack by `filter(kr, kc)`.
pub(crate) fn apply(stack: &mut [Complex64], rows: usize, cols: usize, filter: impl Fn(usize, usize) -> f64 + Sync) {
    stack.par_chunks_mut(cols).enumerate().for_each(|(line, row)| {
        let kr = line % rows;
        for (kc, v) in row.iter_mut().enumerate() {
            *v *= filter(kr, kc);
        }
    });
}

/// `sqrt(mean(map(crop).^2))`.
pub(crate) fn cropped_rms(map: &[f64], grid: &Grid) -> f64 {
    let sum: f64 = Grid::crop_range(grid.height)
        .map(|y| Grid::crop_range(grid.width).map(|x| map[y * grid.width + x].powi(2)).sum::<f64>())
        .sum();
    (sum / grid.crop_pixels() as f64).sqrt()
}
