//! The appearance stage (`lo_index`) from the forward gray-value spectra, batched over the
//! log-Gabor bands. Per group of bands: `gabor_apply` filters every band of the group for
//! every image of the chunk into one stack (one dispatch), one batched inverse FFT (the
//! engine's: 2 dispatches up to 4096 per side) transforms the whole stack, `appear_blocks`
//! takes the magnitudes and the block statistics of every band of every pair (one dispatch,
//! z = pair x band) and `sum_bands` adds their weighted differences into the cells in band
//! order, then after the last group writes the crop-weighted partial sums of the squared
//! cells. So a group is 5 dispatches and barriers, whatever its bands; one 512x512 pair's 20
//! bands are one group (84 MB of stack).
//!
//! Counts per chunk (H200, `mad bench`, one pair):
//! - before, one band at a time through one buffer: 20 x (`gabor_apply` + 2 FFT passes +
//!   `appear_blocks`) + `sum_appearance` = 81 dispatches and barriers, each drain of the GPU
//!   too small to fill it at 512x512; 0.905 ms of appearance kernels, 1.82 ms wall;
//! - now: 5 at 512x512 (0.44 ms of kernels: filter 0.06, FFT 0.16, statistics 0.22; 0.90 to
//!   1.0 ms wall, the host recording 76 fewer dispatches); at 1920x1080, whose lines the
//!   engine transforms by mixed radix at their own length (four columns of 1080 per
//!   workgroup), one group of 5 dispatches.
//!
//! Bytes per pixel of one image and band, before and after alike: the filter writes the band
//! (8, the spectrum read once per group), the FFT reads and writes it twice (32), the
//! statistics read it with the tiles' overlap ((44/32)^2 x 8 = 15): about 55 B, i.e. 40 x 55
//! = 2.2 KB per pixel of a pair (580 MB for a 512x512 pair, 4.6 GB for 1920x1080), where the
//! statistics' differences and cells are 1/16 of a pixel's.

use engine::prims::fft::{Direction, Fft2d};
use engine::{Buffer, Context, Kernel, Location, Recorder, Resource};

use super::{Push, TILE, WORKGROUP};
use crate::constants::GABOR_ORIENTATIONS;
use crate::grid::Grid;
use crate::shaders::kernels;
use crate::MadError;

/// The log-Gabor bands of the appearance stage, scale-major
/// (band = scale * orientations + orientation).
pub(super) const BANDS: usize = crate::constants::GABOR_SCALES * GABOR_ORIENTATIONS;

/// Bytes a slot's band stack aims to stay under: a group holds as many bands as fit (at
/// least one), the groups of a stage as even as they can be. Where the engine's FFT
/// transforms many columns per workgroup, big groups are best (H200: 10 pairs of 512x512
/// scored 2307 pairs/s in groups of 10 bands, 671 MB, and 1965 in groups of one).
const BANDS_TARGET_BYTES: usize = 1 << 30;

/// The target where a column's FFT (`engine::prims::fft::line_fft_size`: Bluestein's power
/// of two for lengths with a prime factor over 5) fills over a quarter of a workgroup's
/// shared memory, so the engine transforms one or two columns per workgroup and reads
/// partial memory sectors: under the L2 cache (60 MB on an H200), so those reads hit it.
/// Columns of 1080 on Bluestein's 4096 took 12.1 ms of inverse FFTs per 1920x1080 pair in
/// groups of one band (33 MB) against 16.2 ms in one group (663 MB).
const BANDS_TARGET_NARROW_BYTES: usize = 48 << 20;

/// The GPU passes of the stage, as [`Recorder::mark`] names them (each group's summed).
pub const MARKS: [&str; 3] = ["appearance: filter", "appearance: inverse FFT", "appearance: statistics"];

/// Timestamps one command buffer of a chunk needs: the marks of the prepare pass, the
/// detection stage, the readback and [`MARKS`] per group, one group per band at most.
pub(super) const MARKS_PER_CHUNK: u32 = 3 + (BANDS * MARKS.len()) as u32;

/// Bytes of one complex f32.
const COMPLEX_BYTES: usize = 8;

/// The appearance stage's pipelines on one device.
pub(super) struct Appearance {
    gabor_apply: Kernel<Push>,
    appear_blocks: Kernel<Push>,
    sum_bands: Kernel<Push>,
}

/// A slot's band stack: room for `group` bands of every image of `capacity` pairs, the
/// inverse FFT plan of the whole stack, and the bands' statistics differences per block.
pub(super) struct BandStack {
    group: usize,
    fft: Fft2d,
    data: Buffer<[f32; 2]>,
    diffs: Buffer<f32>,
}

/// Bands per group for `bands` bands of `capacity` pairs of `grid`'s size, under `target`
/// bytes of stack where one band leaves room for more.
fn group_size(pixels: usize, capacity: usize, bands: usize, target: usize) -> usize {
    let per_band = pixels.saturating_mul(2 * capacity * COMPLEX_BYTES).max(1);
    let most = (target / per_band).clamp(1, bands.max(1));
    bands.max(1).div_ceil(bands.max(1).div_ceil(most))
}

/// Statistics tiles per side of the kept blocks of `push` ([`TILE`] x [`TILE`] blocks each).
fn tiles(push: &Push) -> [u32; 2] {
    [(push.cells_x1 - push.cells_x0).div_ceil(TILE), (push.cells_y1 - push.cells_y0).div_ceil(TILE)]
}

/// Partial sums `sum_bands` writes per pair: one per workgroup of [`WORKGROUP`] cells.
pub(super) fn partials_per_pair(grid: &Grid) -> usize {
    grid.blocks().div_ceil(WORKGROUP as usize)
}

/// [`BANDS_TARGET_BYTES`], or [`BANDS_TARGET_NARROW_BYTES`] for columns of `height` on a
/// device whose workgroups have too little shared memory for several of them; never more
/// than one storage-buffer binding holds (lavapipe's is 128 MiB, so the default chunks'
/// stacks there would not bind in one group of every band).
fn target_bytes(ctx: &Context, height: usize) -> usize {
    let info = ctx.info();
    let target =
        if 4 * engine::prims::fft::line_fft_size(height) * COMPLEX_BYTES > info.max_shared_memory_bytes as usize {
            BANDS_TARGET_NARROW_BYTES
        } else {
            BANDS_TARGET_BYTES
        };
    target.min(usize::try_from(info.max_storage_buffer_range).unwrap_or(usize::MAX))
}

/// Bytes per pixel of one pair a band stack of [`BandStack::new`] for `bands` bands of
/// `capacity` pairs of `width x height` holds on `ctx`'s device.
pub(super) fn stack_bytes_per_pixel(
    ctx: &Context,
    (width, height): (usize, usize),
    capacity: usize,
    bands: usize,
) -> u64 {
    let target = target_bytes(ctx, height);
    (2 * COMPLEX_BYTES * group_size(width.saturating_mul(height), capacity, bands, target)) as u64
}

impl BandStack {
    /// The stack for `bands` bands of `capacity` pairs of `grid`'s size.
    pub(super) fn new(ctx: &Context, grid: &Grid, capacity: usize, bands: usize) -> Result<BandStack, MadError> {
        Self::with_target(ctx, grid, capacity, bands, target_bytes(ctx, grid.height))
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
            diffs: ctx.buffer(capacity * group * grid.blocks(), Location::Device, "mad band statistics differences")?,
        })
    }
}

/// Where the stage reads and writes: `spec` the forward spectra (images `2p`, `2p + 1`),
/// `cells` one per block and pair, `partials` [`partials_per_pair`] per pair, and for a
/// tile's window (one pair) its seams.
pub(super) struct StageBuffers<'a> {
    pub spec: &'a Buffer<[f32; 2]>,
    pub cells: &'a Buffer<f32>,
    pub partials: &'a Buffer<f32>,
    pub seams: Option<SeamInputs<'a>>,
}

/// A tile window's seams ([`crate::seams`]): the window spectra of the ramped lines
/// `[P_ref, P_dst, Q_ref, Q_dst]` and [`crate::seams::Seams::table`] on the device.
#[derive(Clone, Copy)]
pub(super) struct SeamInputs<'a> {
    pub lines: &'a Buffer<[f32; 2]>,
    pub table: &'a Buffer<f32>,
}

impl Appearance {
    pub(super) fn new(ctx: &Context) -> Result<Appearance, MadError> {
        Ok(Appearance {
            gabor_apply: ctx.kernel(&kernels::GABOR_APPLY, &[WORKGROUP])?,
            appear_blocks: ctx.kernel(&kernels::APPEAR_BLOCKS, &[TILE * TILE, TILE])?,
            sum_bands: ctx.kernel(&kernels::SUM_BANDS, &[WORKGROUP])?,
        })
    }

    /// Dispatches [`Appearance::record`] makes for the bands `[first, end)` in groups of
    /// `stack`'s (each group: the filter, the FFT's passes, the statistics, their sum).
    pub(super) fn dispatches(stack: &BandStack, (first, end): (usize, usize)) -> usize {
        (end - first).div_ceil(stack.group) * (3 + stack.fft.passes())
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
        let grid = Grid::new(base.width as usize, base.height as usize);
        let bins = base.width * base.height;
        let [tiles_x, tiles_y] = tiles(base);
        let sum_groups = partials_per_pair(&grid) as u32;
        // A whole image's filter reads no seams: any buffer fills their bindings.
        assert_eq!(io.seams.is_some(), base.tiled != 0, "a tile's window and only a tile's has seams");
        let (lines, table): (&dyn Resource, &dyn Resource) = match io.seams {
            Some(s) => (s.lines, s.table),
            None => (io.spec, io.spec),
        };
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
            rec.pass(&self.gabor_apply)
                .read(io.spec)
                .write(&stack.data)
                .read(lines)
                .read(table)
                .push(&push)
                .dispatch_linear(bins.div_ceil(WORKGROUP))?;
            rec.mark(MARKS[0]);
            stack.fft.record(rec, &stack.data, Direction::Inverse)?;
            rec.mark(MARKS[1]);
            rec.pass(&self.appear_blocks).read(&stack.data).write(&stack.diffs).push(&push).dispatch([
                tiles_x,
                tiles_y,
                base.pairs * count as u32,
            ])?;
            rec.pass(&self.sum_bands)
                .read(&stack.diffs)
                .read_write(io.cells)
                .write(io.partials)
                .push(&push)
                .dispatch([sum_groups, 1, base.pairs])?;
            rec.mark(MARKS[2]);
            start += count;
        }
        Ok(())
    }
}

/// Each kernel of the stage against its f64 twin on random spectra at an odd size, two
/// pairs, seven bands in groups of three (3, 3, 1: overwrite, accumulate, partial sums).
#[cfg(test)]
mod tests {
    use engine::prims::fft::{Complex64, Fft2dCpu};
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::filters::log_gabor;

    const PAIRS: usize = 2;
    const RANGE: (usize, usize) = (5, 12);
    /// Bands per group, so that [`RANGE`] takes three groups.
    const GROUP: usize = 3;

    /// A grid of odd sides (3 x 2 statistics tiles), random non-zero spectra of `PAIRS`
    /// pairs, their upload, a band stack of [`GROUP`] bands and the push constants.
    struct Fixture {
        ctx: &'static Context,
        grid: Grid,
        spec: Vec<[f32; 2]>,
        upload: Buffer<[f32; 2]>,
        stack: BandStack,
        base: Push,
    }

    fn setup() -> Fixture {
        let ctx = engine::testing::context();
        let grid = Grid::new(83, 71);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
        let spec: Vec<[f32; 2]> = (0..2 * PAIRS * grid.pixels())
            .map(|_| [rng.gen_range(0.1..10.0) * rng.gen_range(-1.0f32..1.0).signum(), rng.gen_range(-10.0..10.0)])
            .collect();
        let upload = ctx.upload(&spec, "test spectra").unwrap();
        let one_band = 2 * PAIRS * grid.pixels() * COMPLEX_BYTES;
        let stack = BandStack::with_target(ctx, &grid, PAIRS, RANGE.1 - RANGE.0, GROUP * one_band).unwrap();
        assert_eq!(stack.group, GROUP);
        let base = super::super::Place::whole(&grid).push(&grid, PAIRS);
        Fixture { ctx, grid, spec, upload, stack, base }
    }

    impl Fixture {
        /// Runs `gabor_apply` once on the fixture's spectra with `push`, the lines' spectra
        /// and the seams' table bound; returns the band stack it wrote.
        fn gabor_apply(
            &self,
            app: &Appearance,
            lines: &(impl Resource + ?Sized),
            table: &(impl Resource + ?Sized),
            push: &Push,
        ) -> Vec<[f32; 2]> {
            let mut rec = self.ctx.recorder().unwrap();
            rec.pass(&app.gabor_apply)
                .read(&self.upload)
                .write(&self.stack.data)
                .read(lines)
                .read(table)
                .push(push)
                .dispatch_linear((self.grid.pixels() as u32).div_ceil(WORKGROUP))
                .unwrap();
            rec.submit().unwrap().wait().unwrap();
            self.ctx.download(&self.stack.data).unwrap()
        }
    }

    /// `spectra[image] * log-Gabor(band)` in f64, bin by bin.
    fn filtered(grid: &Grid, spec: &[[f32; 2]], image: usize, band: usize) -> Vec<Complex64> {
        let (w, h) = (grid.width, grid.height);
        let n = grid.pixels();
        (0..n)
            .map(|i| {
                let f = log_gabor(i / w, i % w, h, w, band / GABOR_ORIENTATIONS, band % GABOR_ORIENTATIONS);
                Complex64::new(spec[image * n + i][0] as f64, spec[image * n + i][1] as f64) * f
            })
            .collect()
    }

    /// `gabor_apply`: every band of a group for every image, the filter within 2e-5 of its
    /// f64 value (f32 log, exp and atan), relative to the bin's spectrum.
    #[test]
    fn gabor_apply_matches_the_filter() {
        let fixture = setup();
        let Fixture { ctx, grid, spec, upload, base, .. } = &fixture;
        let app = Appearance::new(ctx).unwrap();
        let push = Push { band_first: RANGE.0 as u32, band_count: GROUP as u32, ..*base };
        // Without seams, the lines and the table are placeholders.
        let got = fixture.gabor_apply(&app, upload, upload, &push);
        let n = grid.pixels();
        let mut worst = 0.0f64;
        for p in 0..PAIRS {
            for b in 0..GROUP {
                for i in 0..2 {
                    let want = filtered(grid, spec, 2 * p + i, RANGE.0 + b);
                    let at = (2 * (p * GROUP + b) + i) * n;
                    for (k, w) in want.iter().enumerate() {
                        let g = Complex64::new(got[at + k][0] as f64, got[at + k][1] as f64);
                        let s = spec[(2 * p + i) * n + k];
                        worst = worst.max((g - w).norm() / (s[0] as f64).hypot(s[1] as f64));
                    }
                }
            }
        }
        assert!(worst < 2e-5, "filter error {worst}");
        engine::testing::assert_no_validation_messages();
    }

    /// `gabor_apply` in a tile's window: the seams' factors of [`crate::seams::Seams`] on
    /// random spectra of the image and of its ramped lines, within 2e-5 of the f64 values
    /// relative to the bin's inputs (the window 83x71 of a 300x257 image).
    #[test]
    fn gabor_apply_adds_the_seams() {
        let fixture = setup();
        let Fixture { ctx, grid, spec, .. } = &fixture;
        let app = Appearance::new(ctx).unwrap();
        let full = Grid::new(300, 257);
        let seams = crate::seams::Seams::new((full.width, full.height), (grid.width, grid.height), 20).unwrap();
        let table = ctx.upload(&seams.table(), "test seams table").unwrap();
        let n = grid.pixels();
        // Four random images for the lines: the fixture's spectra, reversed.
        let lines: Vec<[f32; 2]> = spec.iter().rev().copied().collect();
        let lines_buffer = ctx.upload(&lines, "test lines").unwrap();
        let place = super::super::Place { full, origin: (-5, -7), cells: crate::grid::Cells::all(grid), tiled: true };
        let push = Push { band_first: RANGE.0 as u32, band_count: GROUP as u32, ..place.push(grid, 1) };
        let got = fixture.gabor_apply(&app, &lines_buffer, &table, &push);
        let c = |v: [f32; 2]| Complex64::new(v[0] as f64, v[1] as f64);
        let mut worst = 0.0f64;
        for b in 0..GROUP {
            let band = RANGE.0 + b;
            for i in 0..2 {
                for k in 0..n {
                    let (kr, kc) = (k / grid.width, k % grid.width);
                    let y = crate::filters::log_gabor_position(kr, grid.height, full.height);
                    let x = crate::filters::log_gabor_position(kc, grid.width, full.width);
                    let g = crate::filters::log_gabor_at(y, x, band / GABOR_ORIENTATIONS, band % GABOR_ORIENTATIONS);
                    let [fa, fb, fc] = seams.factors(band, kr, kc, g);
                    let inputs = [c(spec[i * n + k]), c(lines[i * n + k]), c(lines[(2 + i) * n + k])];
                    let want = inputs[0] * fa + inputs[1] * fb + inputs[2] * fc;
                    let scale: f64 = inputs.iter().map(|v| v.norm()).sum();
                    worst = worst.max((c(got[(2 * b + i) * n + k]) - want).norm() / scale);
                }
            }
        }
        assert!(worst < 2e-5, "seamed filter error {worst}");
        engine::testing::assert_no_validation_messages();
    }

    /// The whole stage (`gabor_apply`, the batched inverse FFT, `appear_blocks`) against the
    /// f64 reference (`cpu::appearance::add_band_cells` on the magnitudes of rustfft's inverse): the cells
    /// within 1e-4 of the largest, the partial sums within 1e-5 of the cells' norm.
    #[test]
    fn cells_and_partials_match_the_cpu_reference() {
        let Fixture { ctx, grid, spec, upload, stack, base } = setup();
        let app = Appearance::new(ctx).unwrap();
        let cells = ctx.buffer::<f32>(PAIRS * grid.blocks(), Location::Device, "test cells").unwrap();
        let partials = ctx.buffer::<f32>(PAIRS * partials_per_pair(&grid), Location::Device, "test partials").unwrap();
        let io = StageBuffers { spec: &upload, cells: &cells, partials: &partials, seams: None };
        let mut rec = ctx.recorder().unwrap();
        app.record(&mut rec, &stack, &io, &base, RANGE, true).unwrap();
        rec.submit().unwrap().wait().unwrap();
        let (got_cells, got_partials) = (ctx.download(&cells).unwrap(), ctx.download(&partials).unwrap());

        let fft = Fft2dCpu::new(grid.width, grid.height).unwrap();
        for p in 0..PAIRS {
            let mut want = vec![0.0; grid.blocks()];
            for band in RANGE.0..RANGE.1 {
                let mut both: Vec<Complex64> = (0..2).flat_map(|i| filtered(&grid, &spec, 2 * p + i, band)).collect();
                fft.process(&mut both, Direction::Inverse).unwrap();
                let magnitude: Vec<f64> = both.iter().map(|c| c.norm()).collect();
                crate::cpu::appearance::add_band_cells(&magnitude, &grid, band / GABOR_ORIENTATIONS, &mut want);
            }
            assert!(want.iter().all(|&c| c > 0.0), "random bands give every cell a difference");
            let got = &got_cells[p * grid.blocks()..(p + 1) * grid.blocks()];
            let largest = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let worst = got.iter().zip(&want).map(|(&g, w)| (g as f64 - w).abs()).fold(0.0, f64::max) / largest;
            assert!(worst < 1e-4, "pair {p}: cells off by {worst} of the largest");
            let per = partials_per_pair(&grid);
            let sum: f64 = got_partials[p * per..(p + 1) * per].iter().map(|&v| v as f64).sum();
            let want: Vec<f32> = want.iter().map(|&v| v as f32).collect();
            let norm = super::super::cells_sum(&grid, &want);
            assert!((sum - norm).abs() < 1e-5 * norm, "pair {p}: partial sums {sum}, cells {norm}");
        }
        engine::testing::assert_no_validation_messages();
    }
}
