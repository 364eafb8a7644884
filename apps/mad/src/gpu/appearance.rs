//! The appearance stage (`lo_index`) from the forward gray-value spectra, batched over the
//! log-Gabor bands: per group of bands, one `gabor_apply` dispatch filters every band of the
//! group for every image of the chunk into one stack, one batched inverse FFT (the engine's,
//! 2 dispatches up to 4096 per side) transforms the whole stack, and one `appear_blocks`
//! dispatch takes the magnitudes, the block statistics of every band of the group and their
//! weighted differences into the cells, and after the last group the crop-weighted partial
//! sums of the squared cells. A pair's 20 bands fit one group up to about 1 GiB of stack
//! ([`BANDS_TARGET_BYTES`]: 1920x1080 takes 663 MB), so one pair's stage is 4 dispatches.
//!
//! Before (one dispatch per band and step, the bands in turn through one buffer): 20 x
//! (`gabor_apply` + 2 FFT passes + `appear_blocks`) + `sum_appearance` = 81 dispatches and 81
//! barriers per chunk. Bytes per pixel of one image and band, both ways alike: the filter
//! reads the spectrum and writes the band (16), the FFT reads and writes it twice (32), the
//! statistics read it with the tiles' overlap ((44/32)^2 x 8 = 15): about 63 B, i.e. 40 x 63
//! = 2.5 KB per pixel of a pair (660 MB for a 512x512 pair, 5.2 GB for 1920x1080). The
//! traffic stays; the dispatches and barriers (each a full drain of the GPU, most of them
//! too small to fill it at 512x512) go from 81 to 4, and the host records 77 fewer.

use engine::prims::fft::{Direction, Fft2d};
use engine::{Buffer, ComputePipeline, Context, Location, Recorder};

use super::{Push, TILE, WORKGROUP};
use crate::constants::GABOR_ORIENTATIONS;
use crate::grid::Grid;
use crate::{shaders, MadError};

/// The log-Gabor bands of the appearance stage, scale-major
/// (band = scale * orientations + orientation).
pub(super) const BANDS: usize = crate::constants::GABOR_SCALES * GABOR_ORIENTATIONS;

/// Bytes a slot's band stack aims to stay under: a group holds as many bands as fit (at
/// least one), the groups of a stage as even as they can be.
const BANDS_TARGET_BYTES: usize = 1 << 30;

/// Bytes of one complex f32.
const COMPLEX_BYTES: usize = 8;

/// The appearance stage's pipelines on one device.
pub(super) struct Appearance {
    gabor_apply: ComputePipeline,
    appear_blocks: ComputePipeline,
}

/// A slot's band stack: room for `group` bands of every image of `capacity` pairs, and the
/// inverse FFT plan of the whole stack.
pub(super) struct BandStack {
    group: usize,
    fft: Fft2d,
    data: Buffer<[f32; 2]>,
}

/// Bands per group for `bands` bands of `capacity` pairs of `grid`'s size, under `target`
/// bytes of stack where one band leaves room for more.
fn group_size(pixels: usize, capacity: usize, bands: usize, target: usize) -> usize {
    let per_band = pixels.saturating_mul(2 * capacity * COMPLEX_BYTES).max(1);
    let most = (target / per_band).clamp(1, bands.max(1));
    bands.max(1).div_ceil(bands.max(1).div_ceil(most))
}

/// Statistics tiles per side of a `grid` ([`TILE`] x [`TILE`] blocks each).
pub(super) fn tiles(grid: &Grid) -> [u32; 2] {
    [(grid.blocks_x as u32).div_ceil(TILE), (grid.blocks_y as u32).div_ceil(TILE)]
}

/// Partial sums `appear_blocks` writes per pair: one per tile.
pub(super) fn partials_per_pair(grid: &Grid) -> usize {
    let [x, y] = tiles(grid);
    (x * y) as usize
}

/// Bytes per pixel of one pair a band stack for `bands` bands of `capacity` pairs of
/// `pixels` each holds.
pub(super) fn stack_bytes_per_pixel(pixels: usize, capacity: usize, bands: usize) -> u64 {
    (2 * COMPLEX_BYTES * group_size(pixels, capacity, bands, BANDS_TARGET_BYTES)) as u64
}

impl BandStack {
    /// The stack for `bands` bands of `capacity` pairs of `grid`'s size.
    pub(super) fn new(ctx: &Context, grid: &Grid, capacity: usize, bands: usize) -> Result<BandStack, MadError> {
        Self::with_target(ctx, grid, capacity, bands, BANDS_TARGET_BYTES)
    }

    fn with_target(
        ctx: &Context,
        grid: &Grid,
        capacity: usize,
        bands: usize,
        target: usize,
    ) -> Result<BandStack, MadError> {
        let group = group_size(grid.pixels(), capacity, bands, target);
        let images = 2 * capacity * group;
        Ok(BandStack {
            group,
            fft: Fft2d::new(ctx, grid.width, grid.height, images)?,
            data: ctx.buffer(images * grid.pixels(), Location::Device, "mad log-Gabor band stack")?,
        })
    }
}

/// Where the stage reads and writes: `spec` the forward spectra (images `2p`, `2p + 1`),
/// `cells` one per block and pair, `partials` [`partials_per_pair`] per pair.
pub(super) struct StageBuffers<'a> {
    pub spec: &'a Buffer<[f32; 2]>,
    pub cells: &'a Buffer<f32>,
    pub partials: &'a Buffer<f32>,
}

impl Appearance {
    pub(super) fn new(ctx: &Context) -> Result<Appearance, MadError> {
        let make = |name: &str, spirv: &[u8], bindings: u32, spec: &[u32]| {
            ctx.compute_pipeline_for::<Push>(name, spirv, bindings, spec)
        };
        Ok(Appearance {
            gabor_apply: make("mad gabor", shaders::GABOR_APPLY, 2, &[WORKGROUP])?,
            appear_blocks: make("mad appearance blocks", shaders::APPEAR_BLOCKS, 3, &[TILE * TILE, TILE])?,
        })
    }

    /// Dispatches the bands `[first, end)` take for `count` pairs in groups of `stack`'s.
    pub(super) fn dispatches(stack: &BandStack, (first, end): (usize, usize)) -> usize {
        (end - first).div_ceil(stack.group) * (2 + stack.fft.passes())
    }

    /// Records the bands `[first, end)` of `count` pairs: their weighted differences
    /// overwrite the cells, and with `sum` (every band) the partial sums are written too.
    pub(super) fn record(
        &self,
        rec: &mut Recorder,
        stack: &BandStack,
        io: &StageBuffers,
        base: &Push,
        (first, end): (usize, usize),
        sum: bool,
    ) -> Result<(), MadError> {
        let bins = base.width * base.height;
        let [tiles_x, tiles_y] = tiles(&Grid::new(base.width as usize, base.height as usize));
        let mut start = first;
        while start < end {
            let count = stack.group.min(end - start);
            let push = Push {
                band_first: start as u32,
                band_count: count as u32,
                accumulate: (start > first) as u32,
                sum_cells: (sum && start + count == end) as u32,
                ..*base
            };
            rec.dispatch_linear(
                &self.gabor_apply,
                &[io.spec.binding(), stack.data.binding()],
                &push,
                bins.div_ceil(WORKGROUP),
            );
            rec.barrier();
            stack.fft.record(rec, &stack.data, Direction::Inverse)?;
            rec.barrier();
            rec.dispatch(
                &self.appear_blocks,
                &[stack.data.binding(), io.cells.binding(), io.partials.binding()],
                &push,
                [tiles_x, tiles_y, base.pairs],
            );
            rec.barrier();
            start += count;
        }
        Ok(())
    }
}
