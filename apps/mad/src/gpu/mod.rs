//! The GPU path: pairs of one size are scored in chunks, every stage of a chunk recorded in
//! one command buffer (no host round trip between stages), with two chunk slots in flight on
//! an [`engine::stream::Stream`] so the host decodes and stages the next chunk while the GPU
//! works on the current one. One file per stage, as on the CPU ([`crate::cpu`]):
//! `detection`, [`appearance`], and `tiled` for pairs over the budget.
//!
//! Per chunk of `B` pairs (images `2p` = reference, `2p+1` = distorted):
//! 1. `prepare`: lightness (reference, and distorted minus reference: the CSF is linear),
//!    mean-free gray values for the log-Gabor stage, squared differences for the local MSE;
//! 2. engine FFT (batched, any size) of both stacks; `csf_apply` builds the CSF per bin;
//!    inverse FFT;
//! 3. `detect_blocks` (shared-memory tiles, two-pass moments), `detect_map` (separable 16x16
//!    box in shared memory times the visibility mask), `sum_detection` (partials per row);
//! 4. the appearance stage ([`appearance`]), the 20 log-Gabor bands batched: `gabor_apply`
//!    (every band of a group, filter per bin) -> one inverse FFT of the whole stack ->
//!    `appear_blocks` (std, skewness, kurtosis of the magnitudes, weighted differences of every
//!    band accumulated into the cells, then their crop-weighted partial sums): 4 dispatches
//!    for one pair where the 20 bands fit one group;
//! 5. the partial sums (and the maps, when asked for) are copied to host-readable memory.
//!
//! Several GPUs: `mad batch --device all` (or a list) runs one [`GpuMad`] per device, each
//! claiming the next group of pairs when it is ready (see `main.rs`). `mad score
//! --split-stages` instead splits one pair's stages over devices ([`score_split`]).

pub mod appearance;
mod detection;
mod seam_lines;
mod tiled;

use std::borrow::Borrow;
use std::sync::Mutex;

use engine::prims::fft::{Direction, Fft2d};
use engine::profile::total_by_name;
use engine::stream::{Done, Stream};
use engine::{Buffer, Context, Kernel, Location, PassTime, Recorder, Submission};
use rayon::prelude::*;

use crate::constants::STRIDE;
use crate::grid::{Cells, Grid};
use crate::input::{check_pair, GrayImage};
use crate::{shaders, MadError, Maps, Scores};
use appearance::{Appearance, BandStack, SeamInputs, StageBuffers, BANDS};
use detection::Detection;

/// Invocations per workgroup of the per-element kernels.
const WORKGROUP: u32 = 256;
/// Blocks per side of a statistics tile: (4*8+12)^2 pixels of two images in shared memory
/// (15.5 KiB) fit lavapipe's 32 KiB and NVIDIA's 48 KiB.
const TILE: u32 = 8;
/// Side of the detection-map tile (fixed in `detect_map.comp`).
const MAP_TILE: u32 = 16;
/// Chunk slots in flight at once, and kept between calls.
pub const KEPT_SLOTS: usize = 2;
/// Pixels per task when staging a chunk's images, so that every core converts part of each
/// image: with one task per image, staging took 0.55-0.64 ms of a 2.0 ms single 512x512 pair
/// on the H100's host, whose cores each have a slow path to memory.
const STAGE_CHUNK: usize = 1 << 14;
/// Bytes of complex lightness per chunk the automatic chunk size aims for.
const CHUNK_TARGET_BYTES: usize = 64 << 20;

/// Push constants shared by every MAD kernel (`mad_common.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    width: u32,
    height: u32,
    pairs: u32,
    blocks_x: u32,
    blocks_y: u32,
    /// The appearance stage's group of bands, and what its `appear_blocks` does with the
    /// cells (`mad_common.glsl`).
    band_first: u32,
    band_count: u32,
    accumulate: u32,
    sum_cells: u32,
    /// Where the images lie in the pair they score ([`Place`]).
    full_width: u32,
    full_height: u32,
    origin_x: i32,
    origin_y: i32,
    tiled: u32,
    cells_x0: u32,
    cells_y0: u32,
    cells_x1: u32,
    cells_y1: u32,
}

/// Where a slot's images lie in the pair they score: the whole image, or the wrapped window
/// of one tile ([`crate::tiled`]) whose kept blocks are the tile's cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    /// The whole image's grid: the filters, the neighbour rule, the crop and the local
    /// MSE's mirror follow it.
    full: Grid,
    /// The whole image's pixel at the images' first (outside the image where the window wraps).
    origin: (i64, i64),
    /// The blocks whose statistics and sums are kept, in the images' own block grid.
    cells: Cells,
    /// Whether the filters sample a tile's bins (the whole image's DC bin is not zeroed).
    tiled: bool,
}

impl Place {
    fn whole(grid: &Grid) -> Place {
        Place { full: *grid, origin: (0, 0), cells: Cells::all(grid), tiled: false }
    }

    /// The push constants of `pairs` pairs of images of `grid`'s size placed here.
    fn push(&self, grid: &Grid, pairs: usize) -> Push {
        Push {
            width: grid.width as u32,
            height: grid.height as u32,
            pairs: pairs as u32,
            blocks_x: grid.blocks_x as u32,
            blocks_y: grid.blocks_y as u32,
            full_width: self.full.width as u32,
            full_height: self.full.height as u32,
            origin_x: self.origin.0 as i32,
            origin_y: self.origin.1 as i32,
            tiled: self.tiled as u32,
            cells_x0: self.cells.x0 as u32,
            cells_y0: self.cells.y0 as u32,
            cells_x1: self.cells.x1 as u32,
            cells_y1: self.cells.y1 as u32,
            ..Push::default()
        }
    }

    /// Rows of detection partial sums `sum_detection` writes per pair: the kept cells' rows
    /// inside the whole image's crop (at least one workgroup, which writes 0 where none).
    fn detection_rows(&self) -> usize {
        let crop = Grid::crop_range(self.full.height);
        let start = ((STRIDE * self.cells.y0) as i64).max(crop.start as i64 - self.origin.1);
        let end = ((STRIDE * self.cells.y1) as i64).min(crop.end as i64 - self.origin.1);
        (end - start).max(1) as usize
    }
}

/// One scored pair coming back from the GPU, tagged as it was given.
pub struct Scored<T> {
    pub tag: T,
    pub width: usize,
    pub height: usize,
    pub scores: Scores,
    pub maps: Option<Maps>,
}

/// The MAD pipelines on one device.
pub struct GpuMad {
    ctx: Context,
    prepare: Kernel<Push>,
    detection: Detection,
    appearance: Appearance,
    /// Slots kept between calls (at most [`KEPT_SLOTS`]), so repeated calls at one size
    /// reuse their FFT plans and buffers.
    kept: Mutex<Vec<Slot>>,
    /// The most pairs an automatic chunk holds ([`GpuMad::set_chunk_cap`]).
    chunk_cap: usize,
    /// The halo of the tiles of pairs over the budget ([`GpuMad::set_tile_halo`]).
    tile_halo: usize,
}

/// Device buffers and the FFT plan for chunks of up to `capacity` pairs of one size.
struct Slot {
    grid: Grid,
    capacity: usize,
    fft: Fft2d,
    gray: Buffer<f32>,
    info: Buffer<[f32; 4]>,
    light: Buffer<[f32; 2]>,
    spec: Buffer<[f32; 2]>,
    sqdiff: Buffer<f32>,
    blocks: Buffer<[f32; 4]>,
    detection_map: Buffer<f32>,
    cells: Buffer<f32>,
    detection_partials: Buffer<f32>,
    appearance_partials: Buffer<f32>,
    readback: Buffer<f32>,
    map_readback: Option<(Buffer<f32>, Buffer<f32>)>,
    /// The log-Gabor band stack, for a slot whose stage runs `bands` bands (none without).
    bands: usize,
    band_stack: Option<BandStack>,
}

/// What a slot is made for: a kept slot is reused for a chunk of the same shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SlotShape {
    grid: Grid,
    /// Pairs per chunk.
    capacity: usize,
    /// Whether the maps are read back.
    maps: bool,
    /// The log-Gabor bands its stage runs.
    bands: usize,
}

impl Slot {
    fn shape(&self) -> SlotShape {
        SlotShape { grid: self.grid, capacity: self.capacity, maps: self.map_readback.is_some(), bands: self.bands }
    }
}

/// Which of a chunk's stages a command buffer runs: both on one device, or one of them
/// when `mad score --split-stages` puts them on two (paper Section 5.3). The stages share
/// nothing but the uploaded images until the host combines their sums, so each device
/// computes what it needs from its own upload: the detection stage the lightness spectra
/// (and the squared differences), the appearance stage the gray-value spectra.
/// With more devices, the appearance stage's bands are split among them too; a device with
/// part of the bands reads back its cells, which the host adds before squaring them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stages {
    detection: bool,
    /// The log-Gabor bands `[start, end)`, scale-major (band = scale * orientations + orientation).
    bands: (usize, usize),
}

impl Stages {
    const BOTH: Stages = Stages { detection: true, bands: (0, BANDS) };
    const DETECTION: Stages = Stages { detection: true, bands: (0, 0) };

    fn bands(bands: (usize, usize)) -> Stages {
        Stages { detection: false, bands }
    }

    fn appearance(self) -> bool {
        self.bands.0 < self.bands.1
    }

    /// Whether this command buffer runs every band, so it can sum the cells itself.
    fn all_bands(self) -> bool {
        self.bands == (0, BANDS)
    }

    /// How many bands this command buffer runs.
    fn band_count(self) -> usize {
        self.bands.1 - self.bands.0
    }
}

/// GPU time of each device's stage under `--split-stages` (`None` where the devices have no
/// timestamps).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct StageTimes {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detection_ms: Option<f64>,
    /// The appearance stage's: the slowest of its devices where its bands are split.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub appearance_ms: Option<f64>,
    /// Each appearance device's, where the bands are split over more than one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub appearance_device_ms: Vec<f64>,
}

/// The scores (and maps) of pair `k` of a finished chunk: its detection sums read from
/// `det`'s slot and its appearance sums from `app`'s (the same slot on one device).
fn read_pair(det: &Slot, app: &Slot, k: usize) -> Result<(Scores, Option<Maps>), MadError> {
    let g = app.grid;
    let sums = app.readback.mapped()?;
    let per_pair = appearance::partials_per_pair(&g);
    let at = app.capacity * app.crop_rows() + k * per_pair;
    let app_sum = sums[at..at + per_pair].iter().map(|&v| v as f64).sum();
    let cells = match &app.map_readback {
        Some((_, cells)) => Some(&cells.mapped()?[k * g.blocks()..(k + 1) * g.blocks()]),
        None => None,
    };
    combine_pair(det, k, app_sum, cells)
}

/// Pair `k`'s scores from `det`'s detection sums and the appearance stage's crop-weighted sum
/// of squared cells, and its maps where `det` read back its detection map and `cells` are given.
fn combine_pair(det: &Slot, k: usize, app_sum: f64, cells: Option<&[f32]>) -> Result<(Scores, Option<Maps>), MadError> {
    let g = det.grid;
    let crop_rows = det.crop_rows();
    let crop_pixels = g.crop_pixels() as f64;
    let sums = det.readback.mapped()?;
    let det_sum: f64 = sums[k * crop_rows..(k + 1) * crop_rows].iter().map(|&v| v as f64).sum();
    let scores = Scores::combine(
        (det_sum / crop_pixels).sqrt() * crate::constants::DETECTION_SCALE,
        (app_sum / crop_pixels).sqrt(),
    );
    let maps = match (&det.map_readback, cells) {
        (Some((map, _)), Some(cells)) => {
            let map = &map.mapped()?[k * g.pixels()..(k + 1) * g.pixels()];
            let appearance =
                (0..g.pixels()).map(|i| g.cell_of(i % g.width, i / g.width).map_or(0.0, |b| cells[b] as f64)).collect();
            Some(Maps::new(g.width, g.height, map.iter().map(|&v| v as f64).collect(), appearance, scores.alpha))
        }
        _ => None,
    };
    Ok((scores, maps))
}

/// The crop-weighted sum of squared cells of one pair, as `appear_blocks.comp` computes it
/// (each cell counted once per cropped pixel inside it), in f64: for cells added on the host.
fn cells_sum(g: &Grid, cells: &[f32]) -> f64 {
    (0..g.blocks())
        .map(|b| {
            let v = cells[b] as f64;
            v * v * g.cell_crop_pixels(b % g.blocks_x, b / g.blocks_x) as f64
        })
        .sum()
}

impl Slot {
    fn crop_rows(&self) -> usize {
        Grid::crop_range(self.grid.height).len()
    }
}

impl GpuMad {
    pub fn new(ctx: &Context) -> Result<GpuMad, MadError> {
        // The statistics kernels hold two (4*TILE + 12)^2 tiles of f32 in shared memory.
        let span = (4 * TILE + 12) as usize;
        let shared = 2 * span * span * 4;
        if shared > ctx.info().max_shared_memory_bytes as usize {
            return Err(engine::EngineError::Unsupported(format!(
                "MAD's block statistics need {shared} bytes of shared memory; the device has {}",
                ctx.info().max_shared_memory_bytes
            ))
            .into());
        }
        Ok(GpuMad {
            ctx: ctx.clone(),
            prepare: ctx.kernel(&shaders::kernels::PREPARE, &[WORKGROUP])?,
            detection: Detection::new(ctx)?,
            appearance: Appearance::new(ctx)?,
            kept: Mutex::new(Vec::new()),
            chunk_cap: usize::MAX,
            tile_halo: crate::tiled::APPEARANCE_HALO,
        })
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The chunk size used for `width x height` pairs when none is asked for: about
    /// 64 MiB of complex lightness, within the device's storage-buffer range.
    pub fn default_chunk(&self, width: usize, height: usize) -> usize {
        let per_pair = width.saturating_mul(height).saturating_mul(16).max(1);
        let range = self.ctx.info().max_storage_buffer_range as usize;
        (CHUNK_TARGET_BYTES / per_pair).clamp(1, (range / per_pair).max(1)).min(self.chunk_cap)
    }

    /// Dispatches the appearance stage records for chunks of `pairs` pairs of `width x
    /// height`, once such a chunk has been scored (its slot is kept).
    pub fn appearance_dispatches(&self, width: usize, height: usize, pairs: usize) -> Option<usize> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let slot = kept.iter().find(|s| s.grid == Grid::new(width, height) && s.capacity == pairs)?;
        Some(Appearance::dispatches(slot.band_stack.as_ref()?, (0, BANDS)))
    }

    /// Caps the automatic chunk size at `pairs` (at least 1), so that a short batch still
    /// completes in several chunks and its progress shows.
    pub fn set_chunk_cap(&mut self, pairs: usize) {
        self.chunk_cap = pairs.max(1);
    }

    /// Bytes per pixel of one pair a slot for `pairs` pairs of `width x height` holds: on the
    /// host, the f32 upload (8) and with maps their readback and the f64 and f32 maps built
    /// from it (36); on the device, the two complex stacks, the squared differences and the
    /// detection map (40) and the log-Gabor band stack (16 per band of a group: 320 where all
    /// 20 bands fit one group). `(host, device)`.
    fn slot_bytes_per_pixel(&self, (width, height): (usize, usize), pairs: usize, maps: bool) -> (u64, u64) {
        let stack = appearance::stack_bytes_per_pixel(&self.ctx, (width, height), pairs, BANDS);
        (8 + if maps { 36 } else { 0 }, 40 + stack)
    }

    /// The most device memory the path plans for: three quarters of the largest
    /// device-local heap (the rest for the FFT's tables and other programs).
    fn device_memory(&self) -> u64 {
        let heaps = &self.ctx.info().memory_heaps;
        heaps.iter().filter(|h| h.device_local).map(|h| h.bytes).max().unwrap_or(u64::MAX) / 4 * 3
    }

    /// Refuses chunks of `pairs` pairs of `width x height`, `slots` of them alive at once,
    /// whose memory would go over the budget (`--max-memory`), before anything is allocated
    /// for them: per pair its two f64 gray images (16 bytes per pixel) and each slot's
    /// ([`GpuMad::slot_bytes_per_pixel`]), device memory included (host memory on a CPU
    /// device such as lavapipe; on a GPU the budget bounds both, so that `--max-memory`
    /// also picks tiles for a pair the device would hold whole: [`GpuMad::plan`]).
    pub fn check_budget(&self, width: u64, height: u64, pairs: u64, slots: u64, maps: bool) -> Result<(), MadError> {
        let size = (width.min(usize::MAX as u64) as usize, height.min(usize::MAX as u64) as usize);
        let (host, device) = self.slot_bytes_per_pixel(size, pairs as usize, maps);
        let per_pixel = 16 + slots * (host + device);
        let bytes = width
            .checked_mul(height)
            .and_then(|p| p.checked_mul(per_pixel))
            .and_then(|b| b.checked_mul(pairs))
            .unwrap_or(u64::MAX);
        let what = match pairs {
            1 => format!("scoring a {width}x{height} pair on the GPU"),
            n => format!("scoring chunks of {n} {width}x{height} pairs on the GPU"),
        };
        kit::budget::check(bytes, what)?;
        Ok(())
    }

    /// A kept slot of this shape, or a new one (`in_flight` chunks beside it).
    fn take_slot(&self, shape: SlotShape, in_flight: usize) -> Result<Slot, MadError> {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        match kept.iter().position(|s| s.shape() == shape) {
            Some(i) => Ok(kept.swap_remove(i)),
            None => self.new_slot(shape, in_flight),
        }
    }

    /// Keeps a finished slot for later calls, dropping the oldest beyond [`KEPT_SLOTS`].
    fn keep_slot(&self, slot: Slot) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.push(slot);
        if kept.len() > KEPT_SLOTS {
            kept.remove(0);
        }
    }

    fn new_slot(&self, shape: SlotShape, in_flight: usize) -> Result<Slot, MadError> {
        let SlotShape { grid, capacity, maps, bands } = shape;
        // This slot and the chunks in flight beside it (taken as the same size).
        let slots = in_flight as u64 + 1;
        self.check_budget(grid.width as u64, grid.height as u64, capacity as u64, slots, maps)?;
        let ctx = &self.ctx;
        let (p, nb) = (grid.pixels(), grid.blocks());
        let crop_rows = Grid::crop_range(grid.height).len();
        let appearance_partials = capacity * appearance::partials_per_pair(&grid);
        let partial_len = capacity * crop_rows + appearance_partials;
        let map_readback = if maps {
            Some((
                ctx.buffer(capacity * p, Location::Download, "mad detection map readback")?,
                ctx.buffer(capacity * nb, Location::Download, "mad appearance cells readback")?,
            ))
        } else {
            None
        };
        Ok(Slot {
            grid,
            capacity,
            fft: Fft2d::new(ctx, grid.width, grid.height, 2 * capacity)?,
            gray: ctx.buffer(2 * capacity * p, Location::Upload, "mad gray input")?,
            info: ctx.buffer(capacity, Location::Upload, "mad pair info")?,
            light: ctx.buffer(2 * capacity * p, Location::Device, "mad lightness spectra")?,
            spec: ctx.buffer(2 * capacity * p, Location::Device, "mad gray spectra")?,
            sqdiff: ctx.buffer(capacity * p, Location::Device, "mad squared differences")?,
            blocks: ctx.buffer(capacity * nb, Location::Device, "mad detection blocks")?,
            detection_map: ctx.buffer(capacity * p, Location::Device, "mad detection map")?,
            cells: ctx.buffer(capacity * nb, Location::Device, "mad appearance cells")?,
            detection_partials: ctx.buffer(capacity * crop_rows, Location::Device, "mad detection partial sums")?,
            appearance_partials: ctx.buffer(appearance_partials, Location::Device, "mad appearance partial sums")?,
            readback: ctx.buffer(partial_len, Location::Download, "mad partial sums readback")?,
            map_readback,
            bands,
            band_stack: if bands > 0 { Some(BandStack::new(ctx, &grid, capacity, bands)?) } else { None },
        })
    }

    /// Writes a chunk's gray values (as f32) and per-pair info into the slot's upload buffers.
    fn stage<T, R: Borrow<GrayImage> + Sync, D: Borrow<GrayImage> + Sync>(
        slot: &mut Slot,
        pairs: &[(T, R, D)],
    ) -> Result<(), MadError>
    where
        T: Sync,
    {
        let p = slot.grid.pixels();
        let gray = slot.gray.mapped_mut()?;
        // Each image's mean from the sums of the chunks it is converted in (one pass over the
        // inputs), added in chunk order, so it does not depend on how rayon splits the work.
        let means: Vec<f32> = gray[..2 * p * pairs.len()]
            .par_chunks_mut(p)
            .enumerate()
            .map(|(i, dst)| {
                let (_, r, d) = &pairs[i / 2];
                let src = if i % 2 == 0 { r.borrow() } else { d.borrow() };
                let sums: Vec<f64> = dst
                    .par_chunks_mut(STAGE_CHUNK)
                    .zip(src.values.par_chunks(STAGE_CHUNK))
                    .map(|(dst, src)| {
                        for (o, v) in dst.iter_mut().zip(src) {
                            *o = *v as f32;
                        }
                        src.iter().sum::<f64>()
                    })
                    .collect();
                (sums.iter().sum::<f64>() / p as f64) as f32
            })
            .collect();
        let rows: Vec<[f32; 4]> = pairs
            .iter()
            .zip(means.chunks(2))
            .map(|((_, r, _), m)| [if r.borrow().eight_bit { 1.0 } else { 0.0 }, m[0], m[1], 0.0])
            .collect();
        slot.info.mapped_mut()?[..rows.len()].copy_from_slice(&rows);
        Ok(())
    }

    /// Records `stages` of one chunk of `count` pairs placed at `place` (a tile's window
    /// with its `seams`).
    fn record(
        &self,
        rec: &mut Recorder,
        slot: &Slot,
        count: usize,
        stages: Stages,
        (place, seams): (&Place, Option<SeamInputs>),
    ) -> Result<(), MadError> {
        let g = slot.grid;
        let base = place.push(&g, count);
        let pixels = (count * g.pixels()) as u32;
        rec.pass(&self.prepare)
            .read(&slot.gray)
            .read(&slot.info)
            .write(&slot.light)
            .write(&slot.spec)
            .write(&slot.sqdiff)
            .push(&base)
            .dispatch_linear(pixels.div_ceil(WORKGROUP))?;
        if stages.detection {
            slot.fft.record(rec, &slot.light, Direction::Forward)?;
        }
        if stages.appearance() {
            slot.fft.record(rec, &slot.spec, Direction::Forward)?;
        }
        rec.mark("prepare + forward FFTs");
        if stages.detection {
            self.detection.record(rec, slot, &base, place)?;
        }
        if stages.appearance() {
            self.record_appearance(rec, slot, &base, stages, seams)?;
        }
        // Both partial arrays go to one readback buffer: detection first, then appearance.
        let crop_rows = slot.crop_rows();
        let maps = slot.map_readback.as_ref();
        if stages.detection {
            rec.copy(&slot.detection_partials, &slot.readback);
            if let Some((map, _)) = maps {
                rec.copy_region(&slot.detection_map, 0, map, 0, count * g.pixels());
            }
        }
        if stages.all_bands() {
            rec.copy_region(
                &slot.appearance_partials,
                0,
                &slot.readback,
                slot.capacity * crop_rows,
                slot.appearance_partials.len(),
            );
        }
        if stages.appearance() {
            if let Some((_, cells)) = maps {
                rec.copy_region(&slot.cells, 0, cells, 0, count * g.blocks());
            }
        }
        rec.host_read(&slot.readback);
        if let Some((map, cells)) = maps {
            rec.host_read(map);
            rec.host_read(cells);
        }
        rec.mark("sums + readback");
        Ok(())
    }

    /// The appearance stage from the forward gray-value spectra: the log-Gabor bands of
    /// `stages`, the statistics differences accumulated into the cells, and (with every band)
    /// their partial sums.
    fn record_appearance(
        &self,
        rec: &mut Recorder,
        slot: &Slot,
        base: &Push,
        stages: Stages,
        seams: Option<SeamInputs>,
    ) -> Result<(), MadError> {
        let stack = slot.band_stack.as_ref().expect("a slot for the appearance stage has a band stack");
        let io = StageBuffers { spec: &slot.spec, cells: &slot.cells, partials: &slot.appearance_partials, seams };
        self.appearance.record(rec, stack, &io, base, stages.bands, stages.all_bands())
    }

    /// Reads a finished chunk into `out`, adds its pass times to `passes` and keeps its slot.
    fn finish<T>(
        &self,
        done: Done<Slot, Vec<T>>,
        out: &mut impl FnMut(Scored<T>),
        passes: &mut Vec<PassTime>,
    ) -> Result<(), MadError> {
        let slot = done.slot;
        for (k, tag) in done.tag.into_iter().enumerate() {
            let (scores, maps) = read_pair(&slot, &slot, k)?;
            out(Scored { tag, width: slot.grid.width, height: slot.grid.height, scores, maps });
        }
        passes.extend(done.passes);
        self.keep_slot(slot);
        Ok(())
    }

    /// Scores a stream of pairs, in chunks of up to `chunk` pairs of the same size (a change of
    /// size starts a new chunk), two chunks in flight. Each result goes to `out` with its tag,
    /// in input order. Pairs must already pass [`check_pair`]. Returns the GPU time per pass,
    /// summed over chunks (empty where the device has no timestamps).
    pub fn score_stream<T: Sync, R: Borrow<GrayImage> + Sync, D: Borrow<GrayImage> + Sync>(
        &self,
        pairs: impl IntoIterator<Item = (T, R, D)>,
        chunk: Option<usize>,
        maps: bool,
        mut out: impl FnMut(Scored<T>),
    ) -> Result<Vec<PassTime>, MadError> {
        let mut passes = Vec::new();
        let mut stream: Stream<Slot, Vec<T>> = Stream::new(KEPT_SLOTS);
        let mut pending: Vec<(T, R, D)> = Vec::new();
        let mut iter = pairs.into_iter();
        loop {
            // Hand back every chunk the GPU has finished before waiting on the next pair
            // (which may mean decoding a group of images), so results follow completion.
            while let Some(done) = stream.poll()? {
                self.finish(done, &mut out, &mut passes)?;
            }
            let next = iter.next();
            let size_of = |r: &R| (r.borrow().width, r.borrow().height);
            let first_size = pending.first().map(|(_, r, _)| size_of(r));
            let size_changes = matches!((&next, first_size), (Some((_, a, _)), Some(b)) if size_of(a) != b);
            let capacity = first_size.map(|(w, h)| chunk.unwrap_or_else(|| self.default_chunk(w, h)));
            let full = capacity.is_some_and(|c| pending.len() >= c);
            if !pending.is_empty() && (next.is_none() || size_changes || full) {
                let (w, h) = first_size.unwrap_or_default();
                let grid = Grid::new(w, h);
                // The oldest chunk finishes before a slot is taken, so at most KEPT_SLOTS
                // slots are alive and its slot can be reused.
                if stream.in_flight() >= KEPT_SLOTS {
                    if let Some(done) = stream.wait()? {
                        self.finish(done, &mut out, &mut passes)?;
                    }
                }
                // A short last chunk gets a slot of its own size: the FFT transforms a slot's
                // whole capacity.
                let mut slot = self
                    .take_slot(SlotShape { grid, capacity: pending.len(), maps, bands: BANDS }, stream.in_flight())?;
                let batch = std::mem::take(&mut pending);
                Self::stage(&mut slot, &batch)?;
                let mut rec = self.ctx.recorder()?;
                rec.enable_profiling(appearance::MARKS_PER_CHUNK)?;
                self.record(&mut rec, &slot, batch.len(), Stages::BOTH, (&Place::whole(&grid), None))?;
                let submission = rec.submit()?;
                let tags = batch.into_iter().map(|(t, _, _)| t).collect();
                // Never waits: a slot was freed above where the ring was full.
                debug_assert!(stream.in_flight() < KEPT_SLOTS);
                stream.push(slot, tags, [submission])?;
            }
            match next {
                Some(item) => {
                    check_pair(item.1.borrow(), item.2.borrow())?;
                    pending.push(item);
                }
                None => break,
            }
        }
        while let Some(done) = stream.wait()? {
            self.finish(done, &mut out, &mut passes)?;
        }
        Ok(total_by_name(&passes))
    }

    /// Scores one pair (and returns its maps when asked): over the whole image where that
    /// fits the memory budget and the device, else in tiles ([`GpuMad::plan`]).
    pub fn score(
        &self,
        reference: &GrayImage,
        distorted: &GrayImage,
        maps: bool,
    ) -> Result<(Scores, Option<Maps>), MadError> {
        check_pair(reference, distorted)?;
        if let Some(plan) = self.plan(reference.width as u64, reference.height as u64, maps)? {
            return self.score_tiled(reference, distorted, &plan, maps);
        }
        let mut result = None;
        self.score_stream([((), reference, distorted)], Some(1), maps, |s| result = Some((s.scores, s.maps)))?;
        Ok(result.expect("one pair in, one result out"))
    }

    /// Stages one pair on this device and submits `stages` of it; `beside` slots of the
    /// same pair are alive on other devices (for the memory budget).
    fn submit_one(
        &self,
        pair: &[((), &GrayImage, &GrayImage)],
        maps: bool,
        stages: Stages,
        beside: usize,
    ) -> Result<(Slot, Submission), MadError> {
        let grid = Grid::new(pair[0].1.width, pair[0].1.height);
        let mut slot = self.take_slot(SlotShape { grid, capacity: 1, maps, bands: stages.band_count() }, beside)?;
        Self::stage(&mut slot, pair)?;
        let mut rec = self.ctx.recorder()?;
        rec.enable_profiling(appearance::MARKS_PER_CHUNK)?;
        self.record(&mut rec, &slot, 1, stages, (&Place::whole(&grid), None))?;
        Ok((slot, rec.submit()?))
    }
}

/// Scores one pair with its detection stage on `gpus[0]`'s device and its appearance stage
/// on the others' (`mad score --split-stages`, the paper's Section 5.3): with one other
/// device it runs the whole appearance stage; with more, each runs a share of the 20
/// log-Gabor bands and reads back its cells, which the host adds (in device order) before
/// squaring. Each device gets its own upload of the pair and computes the spectra its stage
/// needs, so nothing crosses between devices; each device starts while the host stages the
/// next one's upload, all run at once, and the host combines their sums as
/// [`GpuMad::score`] does. With two devices the result is the one-device result exactly (the
/// same kernels on the same data); with more, the cells' f32 additions are grouped
/// differently (within 1e-6 relative). The devices may be contexts on one physical device.
pub fn score_split(
    gpus: &[&GpuMad],
    reference: &GrayImage,
    distorted: &GrayImage,
    maps: bool,
) -> Result<(Scores, Option<Maps>, StageTimes), MadError> {
    let (detect, appear) = match gpus {
        [detect, appear @ ..] if !appear.is_empty() => (detect, &appear[..appear.len().min(BANDS)]),
        _ => return Err(MadError::SplitDevices(gpus.len())),
    };
    check_pair(reference, distorted)?;
    let pair = [((), reference, distorted)];
    let det = detect.submit_one(&pair, maps, Stages::DETECTION, 0)?;
    let n = appear.len();
    let mut runs = Vec::with_capacity(n);
    for (i, gpu) in appear.iter().enumerate() {
        let stages = Stages::bands((i * BANDS / n, (i + 1) * BANDS / n));
        // A share of the bands reads back its cells, through the maps' readback.
        runs.push(gpu.submit_one(&pair, maps || n > 1, stages, i + 1)?);
    }
    let gpu_ms = |passes: Vec<PassTime>| (!passes.is_empty()).then(|| passes.iter().map(|p| p.ms).sum::<f64>());
    let detection_ms = gpu_ms(det.1.wait_profiled()?);
    let mut slots = Vec::with_capacity(n);
    let mut appearance_ms = Vec::with_capacity(n);
    for (slot, run) in runs {
        appearance_ms.extend(gpu_ms(run.wait_profiled()?));
        slots.push(slot);
    }
    let (scores, maps) = if let [app] = slots.as_slice() {
        read_pair(&det.0, app, 0)?
    } else {
        let g = det.0.grid;
        let mut cells = vec![0f32; g.blocks()];
        for slot in &slots {
            let part = slot.map_readback.as_ref().map(|(_, c)| c).expect("a share of the bands reads back its cells");
            for (sum, v) in cells.iter_mut().zip(&part.mapped()?[..g.blocks()]) {
                *sum += v;
            }
        }
        combine_pair(&det.0, 0, cells_sum(&g, &cells), Some(&cells))?
    };
    detect.keep_slot(det.0);
    for (gpu, slot) in appear.iter().zip(slots) {
        gpu.keep_slot(slot);
    }
    let times = StageTimes {
        detection_ms,
        appearance_ms: (appearance_ms.len() == n).then(|| appearance_ms.iter().copied().fold(0.0, f64::max)),
        appearance_device_ms: if n > 1 && appearance_ms.len() == n { appearance_ms } else { Vec::new() },
    };
    Ok((scores, maps, times))
}
