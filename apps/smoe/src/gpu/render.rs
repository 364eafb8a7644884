//! The GPU renderer: kernel preparation (fast or robust factorisation), per-view culling
//! records, binning of kernels to screen tiles (exact bound, the paper's relevance window,
//! or none), and the per-tile blend. Everything after the model upload stays on the GPU;
//! a frame is one command buffer. The tile lists are built in two passes over the kernels
//! (count per tile, then write at the tile's offset), the offsets being the engine's
//! exclusive scan of the counts.

use engine::prims::scan::{ScanConfig, Scanner, TOTAL_INDEX};
use engine::{Buffer, Context, Kernel, Location, Recorder};

use crate::model::Model;
use crate::shaders::kernels;

/// How the per-pixel quadratic form and expert are computed (Section 5).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Closed-form inverse of the coordinate covariance.
    Fast,
    /// Cholesky factor and triangular solves.
    Robust,
}

/// Which kernels each tile blends.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Cull {
    /// Per-tile lists from the error bound: the colour changes by less than 1/65536.
    Exact,
    /// The paper's relevance window: kernels centred within `window` pixels of the tile.
    Window,
    /// Every tile blends every kernel.
    Off,
}

impl Cull {
    fn code(self) -> u32 {
        match self {
            Cull::Off => 0,
            Cull::Exact => 1,
            Cull::Window => 2,
        }
    }
}

/// Pixel format of the render target buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutFormat {
    /// Three f32 per pixel, unclamped.
    RgbF32,
    /// One u32 per pixel, bytes R, G, B, A (clamped, rounded).
    Rgba8,
    /// One u32 per pixel, bytes B, G, R, A.
    Bgra8,
    /// Four f32 per pixel: RGB (unclamped) and the log of the gate's softmax denominator
    /// (the refinement's backward pass reads both).
    RgbLseF32,
}

/// What to render.
#[derive(Clone, Copy, Debug)]
pub struct RenderSettings {
    pub width: u32,
    pub height: u32,
    /// Normalised view position (u, v); ignored for images.
    pub uv: [f32; 2],
    pub cull: Cull,
    /// Tile (block) edge in pixels.
    pub tile: u32,
    /// Relevance-window border in pixels (Cull::Window).
    pub window: f32,
    pub format: OutFormat,
}

impl RenderSettings {
    pub fn new(width: u32, height: u32) -> RenderSettings {
        RenderSettings {
            width,
            height,
            uv: [0.0; 2],
            cull: Cull::Exact,
            tile: 16,
            window: 32.0,
            format: OutFormat::RgbF32,
        }
    }

    fn tiles(&self) -> (u32, u32) {
        (self.width.div_ceil(self.tile), self.height.div_ceil(self.tile))
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Push {
    width: u32,
    height: u32,
    tile: u32,
    tiles_x: u32,
    tiles_y: u32,
    kernels: u32,
    cull: u32,
    pub(crate) phase: u32,
    view_u: f32,
    view_v: f32,
    span: f32,
    margin: f32,
    window: f32,
    capacity: u32,
    out_format: u32,
    ycbcr: u32,
}

const LINEAR_GROUP: u32 = 64;
/// Invocations of smoe_floor's one workgroup.
const FLOOR_GROUP: u32 = 256;
const CHUNK: u32 = 64;
const CULL_STRIDE: usize = 12;

/// Floats per prepared kernel record on the GPU.
fn prep_stride(p: usize) -> usize {
    if p == 2 {
        16
    } else {
        32
    }
}

/// Culling constants from the model: the colour deviation bound `a` and the log-margin
/// `M = ln(65536 K gain) + 1` (docs/formats.md, "SMoE culling bound").
pub fn culling_constants(model: &Model) -> (f64, f64) {
    let (lo, hi) = model
        .mu
        .chunks_exact(model.dims())
        .flat_map(|m| m[model.coord_dims..].iter().copied())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let span = (hi - lo) + 1.0;
    let margin = 65536f64.ln() + (model.len() as f64).ln() + model.color_space.gain().ln() + 1.0;
    (span, margin)
}

/// A model on the GPU, prepared for one mode, with the pipelines that render it.
pub struct Renderer {
    ctx: Context,
    p: usize,
    kernels: usize,
    raw: Buffer<f32>,
    prep: Buffer<f32>,
    span: f32,
    margin: f32,
    ycbcr: bool,
    prepare: Kernel<Push>,
    view: Kernel<Push>,
    bin: Kernel<Push>,
    floor: Kernel<Push>,
    scanner: Scanner,
    render: Vec<(u32, Kernel<Push>)>,
    mode: Mode,
}

/// Per-size buffers of a frame (reused across frames of one size).
pub struct Frame {
    pub settings: RenderSettings,
    pub(crate) tiles_x: u32,
    pub(crate) tiles_y: u32,
    pub(crate) cull: Buffer<f32>,
    pub(crate) keys: Buffer<u32>,
    pub(crate) counts: Buffer<u32>,
    pub(crate) offsets: Buffer<u32>,
    /// The scan's scratch; `[TOTAL_INDEX]` holds the total list entries.
    scan: Buffer<u32>,
    cursor: Buffer<u32>,
    pub(crate) lists: Buffer<u32>,
    /// The bound floor key: the smallest tile bound (0: no tile has one).
    pub(crate) floor: Buffer<u32>,
    /// The rendered pixels (see [`OutFormat`]).
    pub out: Buffer<u32>,
}

impl Frame {
    /// Capacity of the tile-list buffer.
    pub fn capacity(&self) -> usize {
        self.lists.len()
    }
}

impl Renderer {
    /// Uploads and prepares `model` (validated) for `mode`.
    pub fn new(ctx: &Context, model: &Model, mode: Mode) -> engine::Result<Renderer> {
        let p = model.coord_dims;
        let robust = (mode == Mode::Robust) as u32;
        let spec = [LINEAR_GROUP, p as u32, robust];
        let prepare = ctx.kernel(&kernels::SMOE_PREPARE, &spec)?;
        let view = ctx.kernel(&kernels::SMOE_VIEW, &spec)?;
        let bin = ctx.kernel(&kernels::SMOE_BIN, &spec)?;
        let floor = ctx.kernel(&kernels::SMOE_FLOOR, &[FLOOR_GROUP, p as u32, robust])?;
        let scan = ScanConfig::from_lookup(|key| kit::tuning::param(ctx.info(), "engine.scan", key));
        let scanner = Scanner::with_config(ctx, scan)?;
        let kernels = model.len();
        let raw = ctx.upload(&model.raw_records(), "smoe raw kernels")?;
        let prep = ctx.buffer::<f32>(kernels * prep_stride(p), Location::Device, "smoe prepared kernels")?;
        let (span, margin) = culling_constants(model);
        let push = Push { kernels: kernels as u32, ..Default::default() };
        // The same pass as [`Renderer::record_prepare`]'s: once it is accepted here, the
        // kernel count (the only thing that varies) is one the device dispatches.
        ctx.run(|rec| rec.pass(&prepare).read(&raw).write(&prep).push(&push).dispatch_linear(groups(kernels)))?;
        Ok(Renderer {
            ctx: ctx.clone(),
            p,
            kernels,
            raw,
            prep,
            span: span as f32,
            margin: margin as f32,
            ycbcr: model.color_space == crate::model::ColorSpace::YCbCr,
            prepare,
            view,
            bin,
            floor,
            scanner,
            render: Vec::new(),
            mode,
        })
    }

    /// Replaces the model by `model` (validated, with as many kernels and the same
    /// dimensions): uploads its records and prepares them again, keeping the pipelines.
    pub fn update(&mut self, model: &Model) -> engine::Result<()> {
        if model.len() != self.kernels || model.coord_dims != self.p {
            return Err(engine::EngineError::InvalidInput("update needs a model of the same shape".into()));
        }
        self.ctx.write(&self.raw, 0, &model.raw_records())?;
        let (span, margin) = culling_constants(model);
        (self.span, self.margin) = (span as f32, margin as f32);
        self.ctx.run(|rec| self.prepare_pass(rec))
    }

    /// The raw kernel records (as uploaded; the EM's culled M-step writes them in place).
    pub(crate) fn raw(&self) -> &Buffer<f32> {
        &self.raw
    }

    /// Records the preparation of the raw records again (after a pass changed them).
    pub(crate) fn record_prepare(&self, rec: &mut Recorder) {
        self.prepare_pass(rec).expect("Renderer::new dispatched the same prepare pass");
    }

    fn prepare_pass(&self, rec: &mut Recorder) -> engine::Result<()> {
        let push = Push { kernels: self.kernels as u32, ..Default::default() };
        rec.pass(&self.prepare).read(&self.raw).write(&self.prep).push(&push).dispatch_linear(groups(self.kernels))
    }

    /// The culling constants (colour deviation bound a, log-margin M) the frames use.
    pub(crate) fn culling(&self) -> (f32, f32) {
        (self.span, self.margin)
    }

    /// Sets the colour deviation bound a of the culling (at least the model's: the EM keeps
    /// one bound that holds for every iteration's model).
    pub(crate) fn set_span(&mut self, span: f32) {
        self.span = span;
    }

    /// The prepared kernel records (robust: mu_X, L with reciprocal diagonal, c, B, mu_Y, g).
    pub(crate) fn prepared(&self) -> &Buffer<f32> {
        &self.prep
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn kernels(&self) -> usize {
        self.kernels
    }

    /// Buffers for frames of `settings`' size; the tile lists start at `capacity` entries
    /// (0: a guess) and grow with [`Renderer::fit_capacity`].
    pub fn frame(&mut self, settings: RenderSettings, capacity: usize) -> engine::Result<Frame> {
        if settings.width == 0 || settings.height == 0 || settings.tile == 0 {
            return Err(engine::EngineError::InvalidInput("output size and tile must be positive".into()));
        }
        let (tiles_x, tiles_y) = settings.tiles();
        if tiles_x > engine::commands::MAX_GROUPS_PER_AXIS || tiles_y > engine::commands::MAX_GROUPS_PER_AXIS {
            return Err(engine::EngineError::InvalidInput(format!(
                "{}x{} pixels in tiles of {} is too many tiles per axis",
                settings.width, settings.height, settings.tile
            )));
        }
        self.render_pipeline(settings.tile)?;
        let n_tiles = (tiles_x * tiles_y) as usize;
        let pixels = settings.width as usize * settings.height as usize;
        let out_len = match settings.format {
            OutFormat::RgbF32 => pixels * 3,
            OutFormat::RgbLseF32 => pixels * 4,
            OutFormat::Rgba8 | OutFormat::Bgra8 => pixels,
        };
        let capacity = if capacity == 0 { self.kernels * 8 + n_tiles * 64 } else { capacity };
        self.check_binding("output", out_len)?;
        self.check_binding("tile lists", capacity)?;
        let ctx = &self.ctx;
        Ok(Frame {
            settings,
            tiles_x,
            tiles_y,
            cull: ctx.buffer(self.kernels * CULL_STRIDE, Location::Device, "smoe culling records")?,
            keys: ctx.buffer(n_tiles, Location::Device, "smoe tile bounds")?,
            counts: ctx.buffer(n_tiles, Location::Device, "smoe tile counts")?,
            offsets: ctx.buffer(n_tiles, Location::Device, "smoe tile offsets")?,
            scan: self.scanner.scratch(n_tiles)?,
            cursor: ctx.buffer(n_tiles, Location::Device, "smoe tile cursors")?,
            lists: ctx.buffer(capacity, Location::Device, "smoe tile lists")?,
            floor: ctx.buffer(1, Location::Device, "smoe bound floor")?,
            out: ctx.buffer(out_len, Location::Device, "smoe output")?,
        })
    }

    /// Refuses a buffer of `len` 4-byte values that the device cannot bind whole: the
    /// kernels would write past the bound range (a 6000 x 6000 RGB f32 output is 412 MiB;
    /// lavapipe binds 128 MiB).
    fn check_binding(&self, what: &str, len: usize) -> engine::Result<()> {
        self.ctx.check_binding(len as u64 * 4, &format!("this frame's {what}"))
    }

    fn render_pipeline(&mut self, tile: u32) -> engine::Result<&Kernel<Push>> {
        let edge = tile.min(16);
        if !self.render.iter().any(|(e, _)| *e == edge) {
            let spec = [edge, self.p as u32, (self.mode == Mode::Robust) as u32, edge, CHUNK];
            let pipe = self.ctx.kernel(&kernels::SMOE_RENDER, &spec)?;
            self.render.push((edge, pipe));
        }
        Ok(&self.render.iter().find(|(e, _)| *e == edge).expect("just created").1)
    }

    /// The push constants of `frame` (phase 0).
    pub(crate) fn push(&self, frame: &Frame) -> Push {
        let s = &frame.settings;
        let format = match s.format {
            OutFormat::RgbF32 => 0,
            OutFormat::Rgba8 => 1,
            OutFormat::Bgra8 => 2,
            OutFormat::RgbLseF32 => 3,
        };
        Push {
            width: s.width,
            height: s.height,
            tile: s.tile,
            tiles_x: frame.tiles_x,
            tiles_y: frame.tiles_y,
            kernels: self.kernels as u32,
            cull: s.cull.code(),
            phase: 0,
            view_u: s.uv[0],
            view_v: s.uv[1],
            span: self.span,
            margin: self.margin,
            window: s.window,
            capacity: frame.lists.len() as u32,
            out_format: format,
            ycbcr: self.ycbcr as u32,
        }
    }

    /// Records one frame: culling records for the view, binning, render into `frame.out`.
    /// Marks passes "view", "bound", "bin", "render" for profiling.
    pub fn record(&self, rec: &mut Recorder, frame: &Frame) -> engine::Result<()> {
        self.record_bins(rec, frame)?;
        self.record_render(rec, frame)
    }

    /// Records the culling records for the view and the binning of kernels to the frame's
    /// tiles: the tile lists (marks "view", "bound" with exact culling, "bin" unless culling
    /// is off).
    pub fn record_bins(&self, rec: &mut Recorder, frame: &Frame) -> engine::Result<()> {
        let s = &frame.settings;
        let mut push = self.push(frame);
        for b in [&frame.keys, &frame.counts, &frame.cursor, &frame.floor] {
            rec.fill(b, 0);
        }
        let k_groups = groups(self.kernels);
        rec.pass(&self.view)
            .read(&self.raw)
            .read(&self.prep)
            .write(&frame.cull)
            .push(&push)
            .dispatch_linear(k_groups)?;
        rec.mark("view");
        let bin = |rec: &mut Recorder, push: &Push| {
            rec.pass(&self.bin)
                .read(&frame.cull)
                .read_write(&frame.keys)
                .read_write(&frame.counts)
                .read(&frame.offsets)
                .read_write(&frame.cursor)
                .write(&frame.lists)
                .read(&frame.floor)
                .push(push)
                .dispatch_linear(self.kernels.max(1) as u32)
        };
        if s.cull == Cull::Exact {
            bin(rec, &push)?;
            rec.pass(&self.floor).read(&frame.keys).write(&frame.floor).push(&push).dispatch([1, 1, 1])?;
            rec.mark("bound");
        }
        if s.cull != Cull::Off {
            push.phase = 1;
            bin(rec, &push)?;
            self.scanner.record_exclusive(rec, &frame.counts, &frame.offsets, &frame.scan)?;
            push.phase = 2;
            bin(rec, &push)?;
            rec.mark("bin");
        }
        Ok(())
    }

    /// Records the per-tile blend into `frame.out` (after [`Renderer::record_bins`]; marks
    /// "render").
    pub(crate) fn record_render(&self, rec: &mut Recorder, frame: &Frame) -> engine::Result<()> {
        let (s, push) = (&frame.settings, self.push(frame));
        let edge = s.tile.min(16);
        let pipe = &self.render.iter().find(|(e, _)| *e == edge).expect("frame() created the render pipeline").1;
        rec.pass(pipe)
            .read(&self.prep)
            .read(&frame.counts)
            .read(&frame.offsets)
            .read(&frame.lists)
            .read(&frame.keys)
            .write(&frame.out)
            .push(&push)
            .dispatch([frame.tiles_x, frame.tiles_y, 1])?;
        rec.mark("render");
        Ok(())
    }

    /// Total tile-list entries the last completed frame needed (reads 4 bytes back; 0
    /// without culling).
    pub fn list_entries(&self, frame: &Frame) -> engine::Result<usize> {
        if frame.settings.cull == Cull::Off {
            return Ok(0);
        }
        Ok(self.ctx.download_range(&frame.scan, TOTAL_INDEX, 1)?[0] as usize)
    }

    /// Grows the frame's tile lists to `entries` if they were too short; true if it grew
    /// (the frame then needs rendering again to use lists everywhere).
    pub fn fit_capacity(&self, frame: &mut Frame, entries: usize) -> engine::Result<bool> {
        if entries <= frame.lists.len() {
            return Ok(false);
        }
        self.check_binding("tile lists", entries + entries / 8)?;
        frame.lists = self.ctx.buffer(entries + entries / 8, Location::Device, "smoe tile lists")?;
        Ok(true)
    }

    /// Renders one image (RGB f32, row 0 at the top) and returns it with the frame's tile
    /// list size.
    pub fn render_rgb(&mut self, settings: RenderSettings) -> engine::Result<(Vec<f32>, usize)> {
        let settings = RenderSettings { format: OutFormat::RgbF32, ..settings };
        let mut frame = self.frame(settings, 0)?;
        loop {
            let mut rec = self.ctx.recorder()?;
            self.record(&mut rec, &frame)?;
            rec.submit()?.wait()?;
            let entries = self.list_entries(&frame)?;
            if !self.fit_capacity(&mut frame, entries)? {
                let pixels = self.ctx.download(&frame.out)?;
                return Ok((bytemuck::cast_slice(&pixels).to_vec(), entries));
            }
        }
    }
}

fn groups(n: usize) -> u32 {
    (n as u32).div_ceil(LINEAR_GROUP).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::render as cpu;
    use crate::data::{sample_image, sample_lightfield, Grid};
    use crate::fit::{fit_gpu, Init};

    fn fitted(grid: &Grid, k: usize) -> Model {
        fit_gpu(engine::testing::context(), grid, k, 8, |_, _| {}).unwrap().0
    }

    /// Max and mean absolute error of the GPU rendering against the f64 oracle.
    fn errors(model: &Model, settings: RenderSettings, mode: Mode, view: [f64; 2]) -> (f64, f64, usize) {
        let ctx = engine::testing::context();
        let uv = cpu::view_coords(model, view);
        let settings = RenderSettings { uv: [uv[0] as f32, uv[1] as f32], ..settings };
        let mut r = Renderer::new(ctx, model, mode).unwrap();
        let (got, entries) = r.render_rgb(settings).unwrap();
        let want = cpu::render(model, settings.width as usize, settings.height as usize, uv);
        let max = got.iter().zip(&want).map(|(&g, w)| (g as f64 - w).abs()).fold(0.0, f64::max);
        let mean = got.iter().zip(&want).map(|(&g, w)| (g as f64 - w).abs()).sum::<f64>() / want.len() as f64;
        (max, mean, entries)
    }

    fn check(model: &Model, w: u32, h: u32, view: [f64; 2]) {
        for mode in [Mode::Robust, Mode::Fast] {
            for (cull, tile) in [(Cull::Exact, 8), (Cull::Off, 16), (Cull::Exact, 16), (Cull::Window, 16)] {
                let settings = RenderSettings { cull, tile, window: 64.0, ..RenderSettings::new(w, h) };
                let (max, mean, entries) = errors(model, settings, mode, view);
                eprintln!("{mode:?} {cull:?} tile {tile} {w}x{h}: max {max:.2e} mean {mean:.2e} entries {entries}");
                assert!(max <= 1.0 / 4096.0 && mean <= 1.0 / 65536.0, "{mode:?} {cull:?} {w}x{h}: {max} {mean}");
            }
        }
        engine::testing::assert_no_validation_messages();
    }

    #[test]
    fn image_model_matches_f64_reference_at_odd_and_upsampled_sizes() {
        let model = fitted(&sample_image(37, 29), 40);
        check(&model, 37, 29, [0.0; 2]);
        check(&model, 74, 58, [0.0; 2]);
    }

    /// A model as dense as the benchmark's (a fitted tile repeated), where exact culling
    /// drops most kernels from each tile and must still hold the error bounds.
    #[test]
    fn exact_culling_prunes_and_holds_the_bound_on_a_tiled_model() {
        let tile = fitted(&sample_image(24, 24), 40);
        let model = crate::data::tile_model(&tile, 24, 100, 70, 450);
        assert_eq!(model.len(), 450);
        for mode in [Mode::Robust, Mode::Fast] {
            let settings = RenderSettings { tile: 8, ..RenderSettings::new(100, 70) };
            let (max, mean, entries) = errors(&model, settings, mode, [0.0; 2]);
            let tiles = 13 * 9;
            eprintln!("{mode:?}: max {max:.2e} mean {mean:.2e}, {} kernels per tile", entries / tiles);
            assert!(entries < tiles * model.len() / 3, "culling kept {entries} of {}", tiles * model.len());
            assert!(max <= 1.0 / 4096.0 && mean <= 1.0 / 65536.0, "{mode:?}: {max} {mean}");
        }
        engine::testing::assert_no_validation_messages();
    }

    /// A random valid model of `k` kernels over `extent` (p = its length): centres uniform,
    /// coordinate standard deviations of 1 to 6 pixels (a fifth to a half of the view range
    /// for light fields), random correlations between every pair of dimensions, colours in
    /// (0.1, 0.9), weights in (0.2, 1) normalised.
    fn random_model(extent: &[usize], k: usize, seed: u64) -> Model {
        let mut rng = kit::fuzz::Rng::new(seed);
        let mut u = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let p = extent.len();
        let d = p + 3;
        let mut m = Model {
            coord_dims: p,
            color_dims: 3,
            color_space: crate::model::ColorSpace::Rgb,
            extent: extent.to_vec(),
            pi: Vec::new(),
            mu: Vec::new(),
            cov: Vec::new(),
        };
        for _ in 0..k {
            m.pi.push(0.2 + 0.8 * u());
            m.mu.extend((0..d).map(|i| if i < p { u() } else { 0.1 + 0.8 * u() }));
            // A lower factor with positive diagonal: cov = L L^T is positive definite.
            // Pixels for the image axes; a tenth of the range for views and colours.
            let scale = |i: usize| if i < 2 { 1.0 / extent[i] as f64 } else { 0.1 };
            let mut l = vec![0.0; d * d];
            for i in 0..d {
                let diag = if i < 2 { 1.0 + 5.0 * u() } else { 2.0 + 3.0 * u() };
                l[i * d + i] = diag * scale(i);
                for j in 0..i {
                    l[i * d + j] = (u() - 0.5) * diag * scale(i);
                }
            }
            for a in 0..d {
                m.cov.extend((0..=a).map(|b| (0..d).map(|t| l[a * d + t] * l[b * d + t]).sum::<f64>()));
            }
        }
        let total: f64 = m.pi.iter().sum();
        m.pi.iter_mut().for_each(|v| *v /= total);
        m.validate().unwrap();
        m
    }

    /// The render stage on random models (not fitted: every kernel's shape, slope and
    /// weight drawn at random) at awkward sizes, against the f64 twin, within the bounds of
    /// [`check`]: max 1/4096, mean 1/65536 (f32 against f64).
    #[test]
    fn random_models_match_the_cpu_twin() {
        check(&random_model(&[37, 29], 23, 1), 37, 29, [0.0; 2]);
        check(&random_model(&[19, 15, 3, 2], 17, 2), 19, 15, [1.0, 0.5]);
    }

    /// The tile lists on a tiled model at an awkward size (tiles cut by both edges): the
    /// offsets are the exclusive scan of the counts, the total is the entries the lists
    /// report, and each tile lists distinct kernels, for both culling modes that bin.
    #[test]
    fn tile_lists_are_the_scan_of_the_counts() {
        let ctx = engine::testing::context();
        let tile = fitted(&sample_image(24, 24), 40);
        let model = crate::data::tile_model(&tile, 24, 101, 67, 400);
        let mut r = Renderer::new(ctx, &model, Mode::Robust).unwrap();
        for cull in [Cull::Exact, Cull::Window] {
            let settings = RenderSettings { cull, tile: 8, window: 8.0, ..RenderSettings::new(101, 67) };
            let (_, entries) = r.render_rgb(settings).unwrap();
            let mut frame = r.frame(settings, entries).unwrap();
            ctx.run(|rec| r.record_bins(rec, &frame)).unwrap();
            assert!(!r.fit_capacity(&mut frame, entries).unwrap());
            let counts = ctx.download(&frame.counts).unwrap();
            let offsets = ctx.download(&frame.offsets).unwrap();
            assert_eq!(offsets, engine::prims::scan::exclusive_cpu(&counts), "{cull:?}");
            assert_eq!(counts.iter().sum::<u32>() as usize, r.list_entries(&frame).unwrap());
            let lists = ctx.download(&frame.lists).unwrap();
            for (&off, &n) in offsets.iter().zip(&counts) {
                let mut tile: Vec<u32> = lists[off as usize..(off + n) as usize].to_vec();
                tile.sort_unstable();
                tile.dedup();
                assert_eq!(tile.len(), n as usize, "{cull:?}: a kernel listed twice in one tile");
                assert!(tile.iter().all(|&k| (k as usize) < model.len()));
            }
        }
        engine::testing::assert_no_validation_messages();
    }

    #[test]
    fn light_field_model_matches_f64_reference_at_fractional_views() {
        let model = fitted(&sample_lightfield(19, 15, 3, 3, 1.5), 24);
        check(&model, 19, 15, [1.0, 1.0]);
        check(&model, 25, 21, [0.5, 1.75]);
    }

    /// An output larger than the device binds in one buffer is refused before anything is
    /// allocated, not rendered past the bound range.
    #[test]
    fn outputs_the_device_cannot_bind_are_refused() {
        let ctx = engine::testing::context();
        let model = Init::Grid.model(&sample_image(8, 6), 4, &mut || {});
        let mut renderer = Renderer::new(ctx, &model, Mode::Robust).unwrap();
        // The smallest square RGB f32 output of more than the range, if the largest size is one.
        let side = ((ctx.info().max_storage_buffer_range / 12) as f64).sqrt() as u32 + 1;
        if side > 16384 {
            return;
        }
        let err = renderer.render_rgb(RenderSettings::new(side, side)).unwrap_err().to_string();
        assert!(err.contains("binds at most"), "{err}");
        engine::testing::assert_no_validation_messages();
    }
}
