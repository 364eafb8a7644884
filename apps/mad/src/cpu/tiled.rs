//! The CPU's tiles ([`crate::tiled`]): each tile's detection and appearance stages over its
//! wrapped window, the filters sampled at the window's bins, the tile's own cells pooled
//! into partial sums (the twin of [`crate::gpu`]'s tiled path).

use engine::prims::fft::{Complex64, Direction, Fft2dCpu};
use rayon::prelude::*;

use crate::constants::{GABOR_ORIENTATIONS, GABOR_SCALES, SKEW_WEIGHT, STRIDE};
use crate::cpu;
use crate::filters::{csf_at, csf_position, log_gabor_at, log_gabor_position};
use crate::grid::{Cells, Grid};
use crate::input::{check_pair, GrayImage};
use crate::seams::Seams;
use crate::tiled::{plan_within, MapBuilder, Plan, Sums, Window, DETECTION_HALO};
use crate::{MadError, Maps, Scores};

/// The CPU's largest halo for the log-Gabor bands: its f64 tiles hold the seams' lines too
/// (248 bytes per window pixel), so under 2 GiB an 8000x8000 pair's windows are about 2100
/// pixels a side, which the 1024-pixel halo would leave tiles of 40 pixels (40000 of them).
/// With 512 the pair takes 64 tiles; the GPU measured 2.6e-5 relative at this halo.
pub const CPU_APPEARANCE_HALO: usize = 512;
/// The CPU's halos, largest first ([`plan_cpu`]). Measured on a 1536x1536 pair: 3.8e-5
/// relative to the whole image at 256, 2.1e-4 at 128; a 512x480 pair's 16 tiles 2.2e-4 at 64.
pub const CPU_HALOS: [usize; 6] = [CPU_APPEARANCE_HALO, 384, 256, 192, 128, 64];
/// The most work a CPU plan may take, relative to the whole image's ([`Plan::cost`]),
/// before a smaller halo is tried.
pub const MAX_TILED_COST: f64 = 3.0;
/// Bytes per window pixel of a CPU tile's transforms: both images' spectra (32), one band of
/// both (32), its transform's buffer (32) and both magnitudes (16), rounded up.
const CPU_TILE_BYTES: u64 = 120;
/// Bytes per window pixel a CPU tile's seams add: both images' `P` and `Q` in complex f64
/// (64) and the transpose buffer of their FFT (64).
const CPU_SEAM_BYTES: u64 = 128;

/// The tiles the CPU path uses for a `width x height` pair within the memory budget: the
/// pair's images (and the assembled maps) plus one tile's transforms at
/// [`CPU_TILE_BYTES`] and [`CPU_SEAM_BYTES`] a pixel of its window.
///
/// The halo is the largest of [`CPU_HALOS`] whose cheapest tiling costs at most
/// [`MAX_TILED_COST`] times the whole image's work ([`Plan::cost`]): a budget far under the
/// whole image's leaves windows so small that a 512-pixel halo would make thousands of them.
/// Where no halo meets that bound, the cheapest plan of any halo.
pub fn plan_cpu(width: u64, height: u64, maps: bool) -> Result<Plan, MadError> {
    let per_tile = |p: &Plan| (p.window.0 as u64) * (p.window.1 as u64) * (CPU_TILE_BYTES + CPU_SEAM_BYTES);
    let mut cheapest: Option<Plan> = None;
    let mut refused = None;
    for halo in CPU_HALOS {
        let make = |w, h, tile| Plan::with_halos(w, h, tile, halo, DETECTION_HALO);
        match plan_within(width, height, maps, make, per_tile, "on the CPU") {
            Ok(plan) if plan.cost() <= MAX_TILED_COST => return Ok(plan),
            Ok(plan) => {
                if cheapest.as_ref().is_none_or(|c| plan.cost() < c.cost()) {
                    cheapest = Some(plan);
                }
            }
            Err(e) => refused = Some(e),
        }
    }
    cheapest.ok_or_else(|| refused.expect("at least one halo was tried"))
}

/// Refuses a pair that the CPU path cannot score within the budget, whole or in tiles.
pub fn check_cpu(width: u64, height: u64, maps: bool) -> Result<(), MadError> {
    if cpu::whole_fits(width, height) {
        return Ok(());
    }
    plan_cpu(width, height, maps).map(|_| ())
}

/// Whether pixel `(x, y)` of a `grid`-sized map is inside the crop.
fn cropped(grid: &Grid, x: usize, y: usize) -> bool {
    Grid::crop_range(grid.width).contains(&x) && Grid::crop_range(grid.height).contains(&y)
}

/// Scores a pair on the CPU in the tiles of `plan`, with its maps when asked for.
pub fn score_cpu(
    reference: &GrayImage,
    distorted: &GrayImage,
    plan: &Plan,
    maps: bool,
) -> Result<(Scores, Option<Maps>), MadError> {
    check_pair(reference, distorted)?;
    let grid = plan.grid;
    let detection_fft = Fft2dCpu::new(plan.detection_window.0, plan.detection_window.1)?;
    let appearance_fft = Fft2dCpu::new(plan.window.0, plan.window.1)?;
    let seams = Seams::new((grid.width, grid.height), plan.window, plan.halo)?;
    let mean = |img: &GrayImage| img.values.par_iter().sum::<f64>() / grid.pixels() as f64;
    let means = (mean(reference), mean(distorted));
    let mut builder = maps.then(|| MapBuilder::new(grid));
    let tiles = plan.tiles();
    let bar = kit::progress::bar(tiles.len() as u64, "tiles");
    let mut sums = Sums::default();
    for cells in &tiles {
        let detection = tile_detection(reference, distorted, plan, cells, &detection_fft, builder.as_mut())?;
        let appearance =
            tile_appearance((reference, distorted), plan, cells, (&appearance_fft, &seams), means, builder.as_mut())?;
        sums.add(Sums { detection, appearance });
        bar.inc(1);
    }
    bar.finish_and_clear();
    let scores = sums.scores(&grid);
    Ok((scores, builder.map(|b| b.finish(scores.alpha))))
}

/// The detection stage of one tile: its cells' sum of `(mask * lmse)^2` over the crop.
fn tile_detection(
    reference: &GrayImage,
    distorted: &GrayImage,
    plan: &Plan,
    cells: &Cells,
    fft: &Fft2dCpu,
    maps: Option<&mut MapBuilder>,
) -> Result<f64, MadError> {
    let (grid, (ww, wh)) = (plan.grid, plan.detection_window);
    let window = Window::around(cells, plan.detection_halo, (ww, wh));
    let mut stack = window.gather(reference, |v| reference.lightness(v));
    stack.extend(window.gather(distorted, |v| distorted.lightness(v)));
    fft.process(&mut stack, Direction::Forward)?;
    let (u, v): (Vec<f64>, Vec<f64>) = (
        (0..wh).map(|k| csf_position(k, wh, grid.height)).collect(),
        (0..ww).map(|k| csf_position(k, ww, grid.width)).collect(),
    );
    cpu::apply(&mut stack, wh, ww, |kr, kc| csf_at(u[kr], v[kc], grid.width));
    fft.process(&mut stack, Direction::Inverse)?;
    let (ref_csf, dst_csf) = stack.split_at(ww * wh);
    let ref_csf: Vec<f64> = ref_csf.iter().map(|c| c.re).collect();
    let error: Vec<f64> = dst_csf.iter().zip(&ref_csf).map(|(d, r)| d.re - r).collect();
    let halo = plan.detection_halo;
    let mask: Vec<f64> = cpu::detection::detection_blocks(&ref_csf, &error, &grid, cells, (halo, halo, ww))
        .into_iter()
        .map(|(e, m, s)| cpu::detection::visibility(e, m, s))
        .collect();
    let (xs, ys) = (Cells::pixels(cells.x0, cells.x1), Cells::pixels(cells.y0, cells.y1));
    let lmse = cpu::detection::local_mse(reference, distorted, xs.clone(), ys.clone());
    let value = |x: usize, y: usize| {
        let cell = (y / STRIDE - cells.y0) * cells.width() + x / STRIDE - cells.x0;
        mask[cell] * lmse[(y - ys.start) * xs.len() + x - xs.start]
    };
    let sum = ys
        .clone()
        .flat_map(|y| xs.clone().map(move |x| (x, y)))
        .filter(|&(x, y)| cropped(&grid, x, y))
        .map(|(x, y)| value(x, y).powi(2))
        .sum();
    if let Some(b) = maps {
        MapBuilder::put(grid.width, &mut b.detection, cells, value);
    }
    Ok(sum)
}

/// The appearance stage of one tile: its cells' crop-weighted sum of squared cells. The
/// bands' seams at the spectrum's edge come from whole lines of the image ([`Seams`]).
fn tile_appearance(
    (reference, distorted): (&GrayImage, &GrayImage),
    plan: &Plan,
    cells: &Cells,
    (fft, seams): (&Fft2dCpu, &Seams),
    means: (f64, f64),
    maps: Option<&mut MapBuilder>,
) -> Result<f64, MadError> {
    let (grid, (ww, wh)) = (plan.grid, plan.window);
    let window = Window::around(cells, plan.halo, (ww, wh));
    let n = ww * wh;
    let mut both = window.gather(reference, |v| v - means.0);
    both.extend(window.gather(distorted, |v| v - means.1));
    // The ramped lines of both images: P of each, then Q of each.
    let mut lines = vec![Complex64::new(0.0, 0.0); 4 * n];
    let (p, q) = lines.split_at_mut(2 * n);
    for ((image, mean), (p, q)) in
        [(reference, means.0), (distorted, means.1)].into_iter().zip(p.chunks_mut(n).zip(q.chunks_mut(n)))
    {
        seams.lines_into(image, mean, &window, (p, q), |v| v)?;
    }
    fft.process(&mut both, Direction::Forward)?;
    fft.process(&mut lines, Direction::Forward)?;
    let (p_spectra, q_spectra) = lines.split_at(2 * n);
    let (y, x): (Vec<f64>, Vec<f64>) = (
        (0..wh).map(|k| log_gabor_position(k, wh, grid.height)).collect(),
        (0..ww).map(|k| log_gabor_position(k, ww, grid.width)).collect(),
    );
    let mut values = vec![0.0; cells.width() * cells.height()];
    let mut band = both.clone();
    for scale in 0..GABOR_SCALES {
        for orientation in 0..GABOR_ORIENTATIONS {
            let index = scale * GABOR_ORIENTATIONS + orientation;
            band.par_iter_mut().enumerate().for_each(|(i, v)| {
                let (kr, kc) = ((i % n) / ww, i % ww);
                let [a, b, c] = seams.factors(index, kr, kc, log_gabor_at(y[kr], x[kc], scale, orientation));
                *v = both[i] * a + p_spectra[i] * b + q_spectra[i] * c;
            });
            fft.process(&mut band, Direction::Inverse)?;
            let magnitude: Vec<f64> = band.par_iter().map(|c| c.norm()).collect();
            let stats = |image: &[f64]| -> Vec<[f64; 3]> {
                cells
                    .iter()
                    .collect::<Vec<_>>()
                    .into_par_iter()
                    .map(|(bx, by)| {
                        let at = |b: usize, b0: usize| plan.halo + STRIDE * (b - b0);
                        cpu::appearance::appearance_block_stats(image, ww, at(bx, cells.x0), at(by, cells.y0))
                    })
                    .collect()
            };
            let (r, d) = (stats(&magnitude[..n]), stats(&magnitude[n..]));
            let weight = crate::constants::scale_weight(scale);
            for ((cell, r), d) in values.iter_mut().zip(r).zip(d) {
                *cell += weight * ((r[0] - d[0]).abs() + SKEW_WEIGHT * (r[1] - d[1]).abs() + (r[2] - d[2]).abs());
            }
        }
    }
    let at = |bx: usize, by: usize| values[(by - cells.y0) * cells.width() + bx - cells.x0];
    let sum = cells.iter().map(|(bx, by)| at(bx, by).powi(2) * grid.cell_crop_pixels(bx, by) as f64).sum();
    if let Some(b) = maps {
        MapBuilder::put(grid.width, &mut b.appearance, cells, |x, y| at(x / STRIDE, y / STRIDE));
    }
    Ok(sum)
}
