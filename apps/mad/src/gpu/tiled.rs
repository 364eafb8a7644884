//! Pairs over the memory budget on the GPU: the tiles of [`crate::tiled`], each scored by
//! the whole-image pipeline on its wrapped window (one slot of the window's size, reused
//! tile after tile), placed in the whole image by push constants ([`Place`]): the filters
//! sample the whole image's spectrum at the window's bins, the neighbour rule, the crop and
//! the local MSE's mirror follow the whole image, and only the tile's own blocks are kept,
//! pooled into partial sums the host adds as the CPU tiled path does ([`Sums`]).
//!
//! Both stages run in one window (the appearance stage's halo; the CPU's detection stage
//! needs only [`crate::tiled::DETECTION_HALO`], but a second window would cost a second
//! slot of the budget), and window sides are lengths the engine transforms at their own
//! size (`2^a 3^b 5^c`). The seams' ramped lines ([`crate::seams`]) are made on the device
//! from the pair's gray images, kept there for all the tiles ([`SeamLines`]); where a gray
//! image does not bind in one piece (lavapipe past about 5800x5800) the host makes them, in
//! f32 straight into the buffer the device copies them from. Their spectra are taken on the
//! device.

use rayon::prelude::*;

use engine::prims::fft::{Direction, Fft2d};
use engine::Location;

use super::seam_lines::SeamLines;
use super::{GpuMad, Place, SeamInputs, SlotShape, Stages, BANDS};
use crate::constants::STRIDE;
use crate::grid::{Cells, Grid};
use crate::input::{check_pair, GrayImage};
use crate::seams::Seams;
use crate::tiled::{plan_within, MapBuilder, Plan, Sums, Window};
use crate::{MadError, Maps, Scores};

/// Bytes per window pixel of a tile's seams on the host where the host makes the lines:
/// both images' `P` and `Q` in complex f32, written where the device copies them from (the
/// lines' transforms take a fixed 16 MiB besides).
const SEAM_HOST_BYTES: u64 = 32;
/// Bytes per window pixel of the seams on the device: the spectra of both images' `P` and `Q`.
const SEAM_DEVICE_BYTES: u64 = 32;
/// Bytes per pixel of the largest buffer bound in one piece, which the device's storage
/// buffer range must hold (lavapipe's is 128 MiB, about 2900x2900 of a whole pair): over
/// the whole image the pair's two spectra (and the band stack's least group), in a tile
/// its four ramped lines.
const WHOLE_BINDING_BYTES: u64 = 16;
const TILE_BINDING_BYTES: u64 = 32;

/// Where a tile's ramped lines are made: on the device, or on the host into this staging
/// buffer.
enum LineMaker {
    Device(Box<SeamLines>),
    Host(engine::Buffer<[f32; 2]>),
}

impl GpuMad {
    /// Sets the halo of the tiles this GPU plans for pairs over the budget (default
    /// [`crate::tiled::APPEARANCE_HALO`]; rounded up to a multiple of 4, at least
    /// [`crate::tiled::MIN_GPU_HALO`]): smaller halos make smaller windows, for tests and
    /// for measuring how much halo is needed.
    pub fn set_tile_halo(&mut self, halo: usize) {
        self.tile_halo = halo;
    }

    /// How this GPU scores a `width x height` pair within the budget (and the device's
    /// memory and buffer bindings): `None` for the whole image at once, else the largest
    /// tiles that fit.
    pub fn plan(&self, width: u64, height: u64, maps: bool) -> Result<Option<Plan>, MadError> {
        let range = self.ctx.info().max_storage_buffer_range;
        let fits_device = |size: (usize, usize), device: u64, binding: u64| {
            let pixels = (size.0 as u64).saturating_mul(size.1 as u64);
            pixels.saturating_mul(device) <= self.device_memory() && pixels.saturating_mul(binding) <= range
        };
        let size = (width.min(usize::MAX as u64) as usize, height.min(usize::MAX as u64) as usize);
        if self.check_budget(width, height, 1, 1, maps).is_ok()
            && fits_device(size, self.slot_bytes_per_pixel(size, 1, maps).1, WHOLE_BINDING_BYTES)
        {
            return Ok(None);
        }
        // The lines on the device: the pair's gray images and two chunks there, for every
        // tile; else on the host, a window's worth of staging a tile.
        let on_device = SeamLines::binds(&self.ctx, size);
        let seam_host = if on_device { 0 } else { SEAM_HOST_BYTES };
        let per_tile = |p: &Plan| {
            let seam_fixed = if on_device { SeamLines::device_bytes(size, p.window) } else { 0 };
            let (host, device) = self.slot_bytes_per_pixel(p.window, 1, maps);
            let (host, device) = (host + seam_host, device + SEAM_DEVICE_BYTES);
            let pixels = (p.window.0 as u64) * (p.window.1 as u64);
            let room = pixels.saturating_mul(device).saturating_add(seam_fixed) <= self.device_memory();
            if room && fits_device(p.window, device, TILE_BINDING_BYTES) {
                pixels.saturating_mul(host + device).saturating_add(seam_fixed)
            } else {
                u64::MAX
            }
        };
        let halo = self.tile_halo;
        plan_within(width, height, maps, |w, h, tile| Plan::gpu(w, h, tile, halo), per_tile, "on the GPU").map(Some)
    }

    /// Refuses a pair this GPU cannot score within the budget, whole or in tiles, before
    /// anything is allocated for it.
    pub fn check_pair_budget(&self, width: u64, height: u64, maps: bool) -> Result<(), MadError> {
        self.plan(width, height, maps).map(|_| ())
    }

    /// Scores one pair in the tiles of `plan` ([`Plan::gpu`]), with its maps when asked for.
    pub fn score_tiled(
        &self,
        reference: &GrayImage,
        distorted: &GrayImage,
        plan: &Plan,
        maps: bool,
    ) -> Result<(Scores, Option<Maps>), MadError> {
        check_pair(reference, distorted)?;
        if !plan.fits_gpu() || plan.grid != Grid::new(reference.width, reference.height) {
            return Err(MadError::TilePlan(format!(
                "{plan:?} (one window for both stages, a halo of 16 pixels or more in steps of 4, the pair's size)"
            )));
        }
        let window = Grid::new(plan.window.0, plan.window.1);
        let mut slot = self.take_slot(SlotShape { grid: window, capacity: 1, maps, bands: BANDS }, 0)?;
        let mean = |img: &GrayImage| img.values.par_iter().sum::<f64>() / img.values.len() as f64;
        let means = (mean(reference), mean(distorted));
        let info = [if reference.eight_bit { 1.0 } else { 0.0 }, means.0 as f32, means.1 as f32, 0.0];
        let seams = Seams::new((plan.grid.width, plan.grid.height), plan.window, plan.halo)?;
        let table = self.ctx.upload(&seams.table(), "mad seams table")?;
        let size = (plan.grid.width, plan.grid.height);
        let mut maker = if SeamLines::binds(&self.ctx, size) {
            LineMaker::Device(Box::new(SeamLines::new(&self.ctx, (reference, distorted), means, &seams, plan.window)?))
        } else {
            LineMaker::Host(self.ctx.buffer(4 * window.pixels(), Location::Upload, "mad ramped lines staging")?)
        };
        let lines = self.ctx.buffer::<[f32; 2]>(4 * window.pixels(), Location::Device, "mad ramped lines")?;
        let lines_fft = Fft2d::new(&self.ctx, window.width, window.height, 4)?;
        slot.info.mapped_mut()?[0] = info;
        let mut builder = maps.then(|| MapBuilder::new(plan.grid));
        let tiles = plan.tiles();
        let bar = kit::progress::bar(tiles.len() as u64, "tiles");
        let mut sums = Sums::default();
        let first = plan.halo / STRIDE;
        for cells in &tiles {
            let area = Window::around(cells, plan.halo, plan.window);
            let gray = slot.gray.mapped_mut()?;
            let (r, d) = gray[..2 * window.pixels()].split_at_mut(window.pixels());
            area.gather_into(reference, r, |v| v as f32);
            area.gather_into(distorted, d, |v| v as f32);
            let kept = Cells { x0: first, y0: first, x1: first + cells.width(), y1: first + cells.height() };
            let place = Place {
                full: plan.grid,
                origin: (area.origin.0 as i64, area.origin.1 as i64),
                cells: kept,
                tiled: true,
            };
            // The ramped lines, [P_ref, P_dst, Q_ref, Q_dst], then their window spectra.
            let mut rec = self.ctx.recorder()?;
            match &mut maker {
                LineMaker::Device(device) => device.record(&mut rec, &area, &lines)?,
                LineMaker::Host(staged) => {
                    let (p, q) = staged.mapped_mut()?.split_at_mut(2 * window.pixels());
                    let images = [(reference, means.0), (distorted, means.1)];
                    for ((image, mean), pq) in
                        images.into_iter().zip(p.chunks_mut(window.pixels()).zip(q.chunks_mut(window.pixels())))
                    {
                        seams.lines_into(image, mean, &area, pq, |c| [c.re as f32, c.im as f32])?;
                    }
                    rec.copy(staged, &lines);
                }
            }
            lines_fft.record(&mut rec, &lines, Direction::Forward)?;
            let seam_inputs = SeamInputs { lines: &lines, table: &table };
            self.record(&mut rec, &slot, 1, Stages::BOTH, (&place, Some(seam_inputs)))?;
            rec.submit()?.wait()?;
            let partials = slot.readback.mapped()?;
            let appearance_at = slot.crop_rows();
            let add = |s: &[f32]| s.iter().map(|&v| v as f64).sum::<f64>();
            sums.add(Sums {
                detection: add(&partials[..place.detection_rows()]),
                appearance: add(&partials[appearance_at..appearance_at + super::appearance::partials_per_pair(&window)]),
            });
            if let (Some(b), Some((map, cell_values))) = (builder.as_mut(), &slot.map_readback) {
                let (map, cell_values) = (map.mapped()?, cell_values.mapped()?);
                // Image pixel (x, y) of the cells is window pixel (x - 4 x0 + halo, ...).
                let to_window = |p: usize, c0: usize| p - STRIDE * c0 + plan.halo;
                MapBuilder::put(plan.grid.width, &mut b.detection, cells, |x, y| {
                    map[to_window(y, cells.y0) * window.width + to_window(x, cells.x0)] as f64
                });
                MapBuilder::put(plan.grid.width, &mut b.appearance, cells, |x, y| {
                    let (bx, by) = (x / STRIDE - cells.x0 + first, y / STRIDE - cells.y0 + first);
                    cell_values[by * window.blocks_x + bx] as f64
                });
            }
            bar.inc(1);
        }
        bar.finish_and_clear();
        self.keep_slot(slot);
        let scores = sums.scores(&plan.grid);
        Ok((scores, builder.map(|b| b.finish(scores.alpha))))
    }
}
