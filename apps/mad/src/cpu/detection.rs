//! The detection stage (`hi_index`): the CSF-filtered lightness, the visibility mask of each
//! block from its error and reference statistics, the local MSE, and d_detect (the twin of
//! `shaders/mad/csf_apply.comp`, `detect_blocks.comp`, `detect_map.comp` and
//! `sum_detection.comp`, recorded by [`crate::gpu`]'s detection stage).

use engine::prims::fft::{Direction, Fft2dCpu};
use rayon::prelude::*;

use super::{apply, cropped_rms, spectra, window_moments};
use crate::constants::*;
use crate::filters::csf;
use crate::grid::{Cells, Grid};
use crate::input::GrayImage;
use crate::MadError;

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

/// `hi_index`: d_detect and the detection map (`msk .* lmse`).
pub(crate) fn detection(
    reference: &GrayImage,
    distorted: &GrayImage,
    grid: &Grid,
    fft: &Fft2dCpu,
) -> Result<(f64, Vec<f64>), MadError> {
    let (w, h) = (grid.width, grid.height);
    let light = |img: &GrayImage| img.values.iter().map(|&v| img.lightness(v)).collect::<Vec<f64>>();
    // One image at a time: one spectrum and its transform's buffer are held, not two.
    let ref_csf = csf_filtered(&[&light(reference)], h, w, fft)?;
    let mut error = csf_filtered(&[&light(distorted)], h, w, fft)?;
    error.par_iter_mut().zip(&ref_csf).for_each(|(d, r)| *d -= r);
    let mask: Vec<f64> = detection_blocks(&ref_csf, &error, grid, &Cells::all(grid), (0, 0, w))
        .into_iter()
        .map(|(e, m, s)| visibility(e, m, s))
        .collect();
    let lmse = local_mse(reference, distorted, 0..w, 0..h);
    let map: Vec<f64> = (0..w * h).map(|i| grid.cell_of(i % w, i / w).map_or(0.0, |b| mask[b] * lmse[i])).collect();
    Ok((cropped_rms(&map, grid) * DETECTION_SCALE, map))
}
