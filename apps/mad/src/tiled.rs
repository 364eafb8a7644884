//! Large images within a memory budget: the pair is cut into tiles of whole blocks, each
//! scored with a halo around it, and the pooled sums of the tiles' own blocks added up.
//!
//! - Tiles are rectangles of cells ([`Cells`]): block `(bx, by)` starts at pixel
//!   `(4 bx, 4 by)` and fills the 4x4 cell there, so a partition of the cells partitions the
//!   pooled sums exactly. Both norms of the metric are sums over the cropped map: of
//!   `(mask * lmse)^2` per pixel (detection) and of `cell^2` per cropped pixel of the cell
//!   (appearance). A tile adds its cells' share; the host takes the roots once at the end.
//! - The whole-image path filters with FFTs, that is with periodic boundaries, so a tile's
//!   halo wraps around the image (pixel `x` reads `x mod width`): every pixel of a tile's
//!   blocks sees the neighbourhood the whole-image transform gives it, as far as the halo
//!   reaches. The filters are defined per bin of the whole image's spectrum; a tile's
//!   transform evaluates the same continuous filter at its own bins
//!   ([`crate::filters::csf_position`], [`crate::filters::log_gabor_position`]), so the
//!   tile's result differs only by the filters' impulse responses beyond the halo.
//! - The log-Gabor filter's DC bin is zeroed in the release; a tile subtracts the whole
//!   image's mean instead and keeps the filter's value at its DC bin, which is the same
//!   operation for the pixels the tile keeps.
//!
//! How far a tile's scores are from the whole image's is set by how fast the filters'
//! impulse responses decay:
//!
//! - The CSF (`make_csf`) is even about the spectrum's edge, so its periodic extension is
//!   continuous there and its response is short: the detection score agrees within 4e-5
//!   relative with a 64-pixel halo ([`DETECTION_HALO`]).
//! - `gaborconvolve` evaluates each log-Gabor filter on the grid `-1 .. 1 - 2/n` without
//!   wrapping it, and the two finest scales (wavelengths 3 and 9) jump at the spectrum's
//!   edge (scale 0 at orientation 0: 0.8 just below `x = 1`, 0 at `x = -1`), so their
//!   responses fall off only as 1/distance along the row and column through each pixel. A
//!   tile takes those seams out of the filter and adds them back from whole rows and
//!   columns of the image ([`crate::seams`]); what is left is continuous on the torus and
//!   short.
//! - Scale 4 (wavelength 243) is smooth but long: the halo sets how much of it a tile
//!   holds ([`APPEARANCE_HALO`]).
//!
//! Measured: the 8000x8000 pair of `mad bench` (H200, under 2 GiB, windows of 2916x3000)
//! scores 22.034394 over the whole image on the GPU and 22.034397 on the CPU in f64; the
//! GPU's tiles are 2.6e-5 off it with a 512-pixel halo (25 tiles), 6.7e-6 with 768 (36
//! tiles, `tiled_8000_2G`) and 1.2e-7 with 1024 (90 tiles). On a 1536x1536 pair on the CPU,
//! 3.8e-5 with a 256-pixel halo and 2.1e-4 with 128. Each tile transforms whole lines of the
//! image for its seams, so the tiled path does many times the whole-image path's work (10 s
//! against 0.75 s at 8000x8000): it is for pairs the whole-image path cannot hold.

use engine::prims::fft::Complex64;
use rayon::prelude::*;

use crate::constants::{BLOCK, DETECTION_SCALE, STRIDE};
use crate::grid::{Cells, Grid};
use crate::input::GrayImage;
use crate::{MadError, Maps, Scores};

/// Pixels of halo around a tile's blocks for the CSF of the detection stage.
pub const DETECTION_HALO: usize = 64;
/// Pixels of halo around a GPU tile's blocks for the log-Gabor bands (longest wavelength
/// 243): [`crate::gpu::GpuMad`]'s default. 6.7e-6 off the whole image at 8000x8000 where
/// 1024 is 1.2e-7 and 512 is 2.6e-5, in 36 tiles where 1024 takes 90.
pub const APPEARANCE_HALO: usize = 768;
/// The least halo the GPU places: the local MSE's mirror reads up to 8 pixels past the cells
/// and the detection sums' rows must fit the window's crop.
pub const MIN_GPU_HALO: usize = 16;
/// Bytes per pixel of the whole pair a tiled run holds throughout: the two f64 images.
const PAIR_BYTES_PER_PIXEL: u64 = 16;
/// Bytes per pixel of the whole pair for the assembled maps: three f32 maps, and the RGB of
/// one PNG at a time while they are written.
const MAP_BYTES_PER_PIXEL: u64 = 16;

/// How a pair is cut: tiles of `tile` cells (columns, rows), each transformed over a window
/// of its cells plus a halo, `window` pixels for the appearance stage and `detection_window`
/// for the detection stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub grid: Grid,
    pub tile: (usize, usize),
    pub halo: usize,
    pub detection_halo: usize,
    pub window: (usize, usize),
    pub detection_window: (usize, usize),
}

/// Pixels a window of `cells` blocks and `halo` on each side spans: the blocks reach 12
/// pixels past their last cell. Rounded up to a size the FFTs are fast at (`fast`); the
/// extra pixels widen the halo on the right (or below).
fn window_side(cells: usize, halo: usize, fast: fn(usize) -> bool) -> usize {
    let least = STRIDE * cells + (BLOCK - STRIDE) + 2 * halo;
    (least..).find(|&n| fast(n)).unwrap_or(least)
}

/// Whether `n` has no prime factor above 7.
fn smooth(mut n: usize) -> bool {
    for p in [2, 3, 5, 7] {
        while n.is_multiple_of(p) {
            n /= p;
        }
    }
    n == 1
}

impl Plan {
    /// Tiles of `tile` cells with the given halos (for measuring how much halo is needed).
    pub fn with_halos(width: usize, height: usize, tile: (usize, usize), halo: usize, detection_halo: usize) -> Plan {
        Plan::sized(width, height, tile, (halo, detection_halo), smooth)
    }

    /// Tiles of `tile` cells for the GPU ([`crate::gpu::GpuMad`]): both stages in one
    /// window, `halo` around the cells (a multiple of [`STRIDE`], at least [`MIN_GPU_HALO`]),
    /// its sides lengths the engine transforms at their own size (`2^a 3^b 5^c`; others take
    /// Bluestein's longer ones).
    pub fn gpu(width: usize, height: usize, tile: (usize, usize), halo: usize) -> Plan {
        let halo = halo.next_multiple_of(STRIDE).max(MIN_GPU_HALO);
        Plan::sized(width, height, tile, (halo, halo), |n| engine::prims::fft::line_fft_size(n) == n)
    }

    fn sized(
        width: usize,
        height: usize,
        tile: (usize, usize),
        (halo, detection_halo): (usize, usize),
        fast: fn(usize) -> bool,
    ) -> Plan {
        let grid = Grid::new(width, height);
        let tile = (tile.0.clamp(1, grid.blocks_x), tile.1.clamp(1, grid.blocks_y));
        let side = |cells: usize, halo: usize| window_side(cells, halo, fast);
        Plan {
            grid,
            tile,
            halo,
            detection_halo,
            window: (side(tile.0, halo), side(tile.1, halo)),
            detection_window: (side(tile.0, detection_halo), side(tile.1, detection_halo)),
        }
    }

    /// Whether the GPU can score this plan: one window for both stages and a halo it places
    /// (its cells on the window's block grid, the local MSE's mirror inside the window).
    pub fn fits_gpu(&self) -> bool {
        self.window == self.detection_window
            && self.halo == self.detection_halo
            && self.halo.is_multiple_of(STRIDE)
            && self.halo >= MIN_GPU_HALO
    }

    /// The tiles, row-major.
    pub fn tiles(&self) -> Vec<Cells> {
        let (gx, gy) = (self.grid.blocks_x, self.grid.blocks_y);
        (0..gy.div_ceil(self.tile.1))
            .flat_map(|ty| (0..gx.div_ceil(self.tile.0)).map(move |tx| (tx, ty)))
            .map(|(tx, ty)| {
                let (x0, y0) = (tx * self.tile.0, ty * self.tile.1);
                Cells { x0, y0, x1: (x0 + self.tile.0).min(gx), y1: (y0 + self.tile.1).min(gy) }
            })
            .collect()
    }

    /// The work of scoring the pair in this plan's tiles, relative to the whole image's: a
    /// window's transforms (46 of the appearance window: both images, their four ramped
    /// lines, 20 bands of both; 4 of the detection window), each two passes of 1D
    /// transforms over its pixels, and the seams' whole lines (rows through the window's
    /// rows, columns through its columns, both images, forward and back), against the whole
    /// image's 46 transforms.
    pub fn cost(&self) -> f64 {
        let area = |(w, h): (usize, usize)| w as f64 * h as f64;
        let (width, height) = (self.grid.width as f64, self.grid.height as f64);
        let lines = self.window.1 as f64 * width + self.window.0 as f64 * height;
        let tile = 2.0 * (42.0 * area(self.window) + 4.0 * area(self.detection_window)) + 4.0 * lines;
        self.tiles().len() as f64 * tile / (2.0 * 46.0 * width * height)
    }

    /// The cheapest of `make`'s plans ([`Plan::cost`]) that `fits`: every tiling of the grid
    /// into `nx x ny` tiles, each count giving the smallest tiles that make it.
    fn cheapest(grid: &Grid, make: impl Fn((usize, usize)) -> Plan, fits: impl Fn(&Plan) -> bool) -> Option<Plan> {
        // The distinct tile sides: ceil(blocks / count) for every count.
        let sides = |blocks: usize| {
            let mut sides: Vec<usize> = (1..=blocks).map(|count| blocks.div_ceil(count)).collect();
            sides.dedup();
            sides
        };
        let (xs, ys) = (sides(grid.blocks_x), sides(grid.blocks_y));
        let mut best: Option<(f64, Plan)> = None;
        for &y in &ys {
            // Narrower tiles of the same height only cost more once one fits.
            for &x in &xs {
                let plan = make((x, y));
                if fits(&plan) {
                    let cost = plan.cost();
                    if best.as_ref().is_none_or(|(c, _)| cost < *c) {
                        best = Some((cost, plan));
                    }
                    break;
                }
            }
        }
        best.map(|(_, plan)| plan)
    }
}

/// Plans the cheapest tiles of `make`'s plans ([`Plan::cost`]) whose windows take at most
/// what the budget leaves beside the pair (and its maps): `per_tile` bytes each.
pub(crate) fn plan_within(
    width: u64,
    height: u64,
    maps: bool,
    make: impl Fn(usize, usize, (usize, usize)) -> Plan,
    per_tile: impl Fn(&Plan) -> u64,
    on: &str,
) -> Result<Plan, MadError> {
    let budget = kit::budget::get();
    let fixed = PAIR_BYTES_PER_PIXEL + if maps { MAP_BYTES_PER_PIXEL } else { 0 };
    let held = width.checked_mul(height).and_then(|p| p.checked_mul(fixed)).unwrap_or(u64::MAX);
    let least = held.saturating_add(per_tile(&make(34, 34, (1, 1))));
    let refuse = || -> MadError {
        kit::KitError::OverBudget {
            what: format!("scoring a {width}x{height} pair in tiles {on}"),
            bytes: least,
            budget,
        }
        .into()
    };
    if least > budget || width > usize::MAX as u64 || height > usize::MAX as u64 {
        return Err(refuse());
    }
    let (w, h) = (width as usize, height as usize);
    Plan::cheapest(&Grid::new(w, h), |tile| make(w, h, tile), |p| per_tile(p) <= budget - held).ok_or_else(refuse)
}

/// A window of the image around a tile's cells: `size` pixels from `origin` (which may lie
/// outside the image: pixels wrap around).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    /// The whole image's pixel at the window's first.
    pub origin: (isize, isize),
    pub size: (usize, usize),
}

impl Window {
    pub(crate) fn around(cells: &Cells, halo: usize, size: (usize, usize)) -> Window {
        let origin = ((STRIDE * cells.x0) as isize - halo as isize, (STRIDE * cells.y0) as isize - halo as isize);
        Window { origin, size }
    }

    /// `f` of the image's values over the window, as complex values.
    pub(crate) fn gather(&self, image: &GrayImage, f: impl Fn(f64) -> f64 + Sync) -> Vec<Complex64> {
        let mut out = vec![Complex64::new(0.0, 0.0); self.size.0 * self.size.1];
        self.gather_into(image, &mut out, |v| Complex64::new(f(v), 0.0));
        out
    }

    /// `f` of the image's values over the window into `out` (row-major, the window's size).
    pub(crate) fn gather_into<T: Send>(&self, image: &GrayImage, out: &mut [T], f: impl Fn(f64) -> T + Sync) {
        let (w, h) = (image.width as isize, image.height as isize);
        out.par_chunks_mut(self.size.0).enumerate().for_each(|(j, row)| {
            let y = (self.origin.1 + j as isize).rem_euclid(h) as usize;
            let line = &image.values[y * image.width..(y + 1) * image.width];
            for (i, v) in row.iter_mut().enumerate() {
                *v = f(line[(self.origin.0 + i as isize).rem_euclid(w) as usize]);
            }
        });
    }
}

/// The pooled sums of some cells: `sum (mask * lmse)^2` over their cropped pixels, and
/// `sum cell^2` weighted by each cell's cropped pixels.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sums {
    pub detection: f64,
    pub appearance: f64,
}

impl Sums {
    pub(crate) fn add(&mut self, other: Sums) {
        self.detection += other.detection;
        self.appearance += other.appearance;
    }

    /// The scores of a pair whose cells' sums these are.
    pub fn scores(&self, grid: &Grid) -> Scores {
        let n = grid.crop_pixels() as f64;
        Scores::combine((self.detection / n).sqrt() * DETECTION_SCALE, (self.appearance / n).sqrt())
    }
}

/// The maps of a tiled run, filled tile by tile.
pub(crate) struct MapBuilder {
    grid: Grid,
    pub detection: Vec<f32>,
    pub appearance: Vec<f32>,
}

impl MapBuilder {
    pub(crate) fn new(grid: Grid) -> MapBuilder {
        MapBuilder { grid, detection: vec![0.0; grid.pixels()], appearance: vec![0.0; grid.pixels()] }
    }

    /// Writes `values` (row-major over the pixels of `cells`) into `map`.
    pub(crate) fn put(width: usize, map: &mut [f32], cells: &Cells, values: impl Fn(usize, usize) -> f64) {
        for y in Cells::pixels(cells.y0, cells.y1) {
            for x in Cells::pixels(cells.x0, cells.x1) {
                map[y * width + x] = values(x, y) as f32;
            }
        }
    }

    pub(crate) fn finish(self, alpha: f64) -> Maps {
        let combined = self
            .detection
            .iter()
            .zip(&self.appearance)
            .map(|(&d, &a)| ((d as f64).powf(alpha) * (a as f64).powf(1.0 - alpha)) as f32)
            .collect();
        Maps {
            width: self.grid.width,
            height: self.grid.height,
            detection: self.detection,
            appearance: self.appearance,
            combined,
        }
    }
}
