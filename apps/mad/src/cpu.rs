//! The CPU reference of the whole metric in f64 (rustfft, rayon): the correctness oracle
//! for the GPU path and the benchmark baseline. Each step re-expresses one piece of the
//! release (`MAD_index.m`, `ical_std.c`, `ical_stat.c`); the constants and their sources
//! are in [`crate::constants`], the filters in [`crate::filters`], the block layout in
//! [`crate::grid`].

use engine::prims::fft::{Complex64, Direction, Fft2dCpu};
use rayon::prelude::*;

use crate::constants::*;
use crate::filters::{csf, log_gabor};
use crate::grid::{Cells, Grid};
use crate::input::{check_pair, GrayImage};
use crate::{MadError, Maps, Scores};

/// Bytes per pixel the reference holds at its peak, in the appearance stage: the two f64
/// gray inputs (16), the detection map kept for the maps (8), the complex spectra of both
/// images (32), one log-Gabor band's copy of them (32) and the transpose buffer the FFT of
/// that band allocates (32). The detection stage peaks lower (96: the inputs, their
/// lightness, its spectra and the FFT's buffer). Measured (peak RSS, /usr/bin/time -v,
/// `mad score --backend cpu`): 40 MB at 512x512, 157 MB at 1024x1024 and 527 MB at
/// 2048x2048, 120.4 bytes per pixel between the last two beside about 35 MB for the program.
pub(crate) const PEAK_BYTES_PER_PIXEL: u64 = 120;

/// Whether the whole-image path scores a `width x height` pair within the memory budget
/// (`--max-memory`); where it does not, [`score`] tiles the pair ([`crate::tiled`]).
pub fn whole_fits(width: u64, height: u64) -> bool {
    let bytes = width.checked_mul(height).and_then(|p| p.checked_mul(PEAK_BYTES_PER_PIXEL)).unwrap_or(u64::MAX);
    bytes <= kit::budget::get()
}

/// Refuses a `width x height` pair that cannot be scored within the memory budget
/// (`--max-memory`), whole or in tiles, before anything is allocated for it.
pub fn check_budget(width: u64, height: u64) -> Result<(), MadError> {
    crate::tiled::check_cpu(width, height, false)
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
    let plan = crate::tiled::plan_cpu(w, h, maps)?;
    crate::tiled::score_cpu(reference, distorted, &plan, maps)
}

/// Scores one pair over the whole image (however large) and returns its maps.
pub fn score_whole(reference: &GrayImage, distorted: &GrayImage) -> Result<(Scores, Maps), MadError> {
    check_pair(reference, distorted)?;
    let grid = Grid::new(reference.width, reference.height);
    let fft = Fft2dCpu::new(grid.width, grid.height)?;
    let (detection, detection_map) = detection(reference, distorted, &grid, &fft)?;
    let (appearance, appearance_map) = appearance(reference, distorted, &grid, &fft)?;
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

/// `real(ifft2(ifftshift(fftshift(fft2(x)) .* csf)))` of a stack of images.
fn csf_filtered(images: &[&[f64]], rows: usize, cols: usize, fft: &Fft2dCpu) -> Result<Vec<f64>, MadError> {
    let mut s = spectra(images, fft)?;
    apply(&mut s, rows, cols, |kr, kc| csf(kr, kc, rows, cols));
    fft.process(&mut s, Direction::Inverse)?;
    Ok(s.into_iter().map(|c| c.re).collect())
}

/// The per-block statistics of `ical_std(dst - ref, ref)`: the standard deviation of the
/// error over the 16x16 block (divisor 255), the reference mean over the block, and the
/// reference's minimum 8x8 standard deviation (divisor 63) over the stored values at
/// offsets 0 and 5; for the blocks of `cells` (row-major), whose values `reference` and
/// `error` hold in a buffer `width` wide, block `(cells.x0, cells.y0)` at `(left, top)`.
/// Which neighbours the minimum reads follows the whole image's `grid`.
pub(crate) fn detection_blocks(
    reference: &[f64],
    error: &[f64],
    grid: &Grid,
    cells: &Cells,
    (left, top, width): (usize, usize, usize),
) -> Vec<(f64, f64, f64)> {
    // The blocks of `cells` and those to their right and below, for the minimum.
    let (ext_w, ext_h) = ((cells.x1 + 1).min(grid.blocks_x) - cells.x0, (cells.y1 + 1).min(grid.blocks_y) - cells.y0);
    let per_block: Vec<(f64, f64, f64)> = (0..ext_w * ext_h)
        .into_par_iter()
        .map(|b| {
            let (x0, y0) = (left + STRIDE * (b % ext_w), top + STRIDE * (b / ext_w));
            let e = window_moments(error, width, x0, y0, BLOCK);
            let r = window_moments(reference, width, x0, y0, BLOCK);
            let s = window_moments(reference, width, x0, y0, SUB_BLOCK);
            let n = (BLOCK * BLOCK) as f64;
            let n8 = (SUB_BLOCK * SUB_BLOCK) as f64;
            ((e[1] / (n - 1.0)).sqrt(), r[0], (s[1] / (n8 - 1.0)).sqrt())
        })
        .collect();
    let at = |bx: usize, by: usize| (by - cells.y0) * ext_w + bx - cells.x0;
    cells
        .iter()
        .map(|(bx, by)| {
            let small = |bx: usize, by: usize| per_block[at(bx, by)].2;
            let mut m = small(bx, by);
            let (right, lower) = (grid.right_neighbour(bx), grid.lower_neighbour(by));
            if right {
                m = m.min(small(bx + 1, by));
            }
            if lower {
                m = m.min(small(bx, by + 1));
            }
            if right && lower {
                m = m.min(small(bx + 1, by + 1));
            }
            let b = per_block[at(bx, by)];
            (b.0, b.1, m)
        })
        .collect()
}

/// The visibility mask of one block from `hi_index`. Where the reference mean is under
/// `G` (including negative means, whose log contrast is complex in MATLAB) `Ci_dst` is
/// `-inf`, and MATLAB's comparisons on real parts then select neither branch: mask 0.
pub fn visibility(std_error: f64, mean: f64, std_min: f64) -> f64 {
    if mean < LUMINANCE_THRESHOLD {
        return 0.0;
    }
    let ci_ref = (std_min / mean).ln();
    let ci_dst = (std_error / mean).ln();
    let slope_threshold = C_SLOPE * (ci_ref - CI_THRESHOLD) + CD_THRESHOLD;
    if ci_ref > CI_THRESHOLD && ci_dst > slope_threshold {
        (ci_dst - slope_threshold) / MS_SCALE
    } else if ci_ref <= CI_THRESHOLD && ci_dst > CD_THRESHOLD {
        (ci_dst - CD_THRESHOLD) / MS_SCALE
    } else {
        0.0
    }
}

/// MATLAB's 'symmetric' padding: mirror with the edge sample repeated.
fn mirror(i: isize, n: usize) -> usize {
    let n = n as isize;
    let i = if i < 0 { -i - 1 } else { i };
    (if i >= n { 2 * n - 1 - i } else { i }) as usize
}

/// `imfilter((ref - dst).^2, ones(16)/256, 'symmetric', 'same', 'conv')`: the 16x16 mean
/// over offsets -7..=8 (the centre of an even kernel is at floor((16+1)/2)), over the pixels
/// `xs x ys` of the image (row-major).
pub(crate) fn local_mse(
    reference: &GrayImage,
    distorted: &GrayImage,
    xs: std::ops::Range<usize>,
    ys: std::ops::Range<usize>,
) -> Vec<f64> {
    let (w, h) = (reference.width, reference.height);
    let sq = |x: usize, y: usize| (reference.values[y * w + x] - distorted.values[y * w + x]).powi(2);
    let lo = -(BLOCK as isize / 2 - 1);
    let hi = BLOCK as isize / 2;
    let (rw, top) = (xs.len(), ys.start as isize + lo);
    // Horizontal sums over the rows the vertical pass reads (mirrored at the image's edges).
    let rows = ys.len() + (hi - lo) as usize;
    let mut horizontal = vec![0.0; rw * rows];
    horizontal.par_chunks_mut(rw).enumerate().for_each(|(r, row)| {
        let y = mirror(top + r as isize, h);
        for (v, x) in row.iter_mut().zip(xs.clone()) {
            *v = (lo..=hi).map(|d| sq(mirror(x as isize + d, w), y)).sum();
        }
    });
    let mut out = vec![0.0; rw * ys.len()];
    out.par_chunks_mut(rw).enumerate().for_each(|(r, row)| {
        for (x, v) in row.iter_mut().enumerate() {
            // Row `r + d - lo` of `horizontal` is image row `ys.start + r + d` before mirroring.
            *v = (0..=(hi - lo) as usize).map(|d| horizontal[(r + d) * rw + x]).sum::<f64>() / (BLOCK * BLOCK) as f64;
        }
    });
    out
}

/// `sqrt(mean(map(crop).^2))`.
fn cropped_rms(map: &[f64], grid: &Grid) -> f64 {
    let sum: f64 = Grid::crop_range(grid.height)
        .map(|y| Grid::crop_range(grid.width).map(|x| map[y * grid.width + x].powi(2)).sum::<f64>())
        .sum();
    (sum / grid.crop_pixels() as f64).sqrt()
}

/// `hi_index`: d_detect and the detection map (`msk .* lmse`).
fn detection(
    reference: &GrayImage,
    distorted: &GrayImage,
    grid: &Grid,
    fft: &Fft2dCpu,
) -> Result<(f64, Vec<f64>), MadError> {
    let (w, h) = (grid.width, grid.height);
    let light = |img: &GrayImage| img.values.iter().map(|&v| img.lightness(v)).collect::<Vec<f64>>();
    let filtered = csf_filtered(&[&light(reference), &light(distorted)], h, w, fft)?;
    let (ref_csf, dst_csf) = filtered.split_at(w * h);
    let error: Vec<f64> = dst_csf.iter().zip(ref_csf).map(|(d, r)| d - r).collect();
    let mask: Vec<f64> = detection_blocks(ref_csf, &error, grid, &Cells::all(grid), (0, 0, w))
        .into_iter()
        .map(|(e, m, s)| visibility(e, m, s))
        .collect();
    let lmse = local_mse(reference, distorted, 0..w, 0..h);
    let map: Vec<f64> = (0..w * h).map(|i| grid.cell_of(i % w, i / w).map_or(0.0, |b| mask[b] * lmse[i])).collect();
    Ok((cropped_rms(&map, grid) * DETECTION_SCALE, map))
}

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
fn appearance(
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
