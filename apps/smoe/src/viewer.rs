//! `smoe view`: a window (`kit::viewer`) showing the model, rendered on the GPU every frame
//! straight into the swapchain's pixel buffer. The title shows frames per second; for light
//! fields the mouse position picks the view.
//! `--frames N --screenshot FILE` renders N frames, saves the last one and exits.

use engine::{Buffer, Context, Recorder};
use kit::viewer::winit::dpi::PhysicalSize;
use kit::viewer::winit::event::WindowEvent;
use kit::viewer::{InFlight, Scene, Target, ViewerError};
use smoe::error::{Result, SmoeError};
use smoe::gpu::Mode;
use smoe::gpu::{Frame, OutFormat, RenderSettings, Renderer};
use smoe::model::Model;

/// What the viewer showed.
pub struct Shown {
    pub frames: u64,
    pub width: u32,
    pub height: u32,
}

// Field order is drop order: the frame's buffers before the renderer.
struct Gpu {
    /// Frames since the tile-list capacity was last checked.
    since_check: u64,
    frame: Frame,
    renderer: Renderer,
}

struct Viewer {
    model: Model,
    mode: Mode,
    uv: [f32; 2],
    /// The device's tuned tile edge (`kit::tuning`), else the renderer's default.
    tile: Option<u32>,
}

impl Viewer {
    fn settings(&self, target: Target) -> RenderSettings {
        let format = if target.bgra { OutFormat::Bgra8 } else { OutFormat::Rgba8 };
        let defaults = RenderSettings::new(target.width, target.height);
        RenderSettings { uv: self.uv, format, tile: self.tile.unwrap_or(defaults.tile), ..defaults }
    }
}

impl Scene for Viewer {
    type Gpu = Gpu;
    type Error = SmoeError;

    fn setup(&mut self, ctx: &Context, target: Target) -> Result<Gpu> {
        self.tile = kit::tuning::param(ctx.info(), "smoe.render", "block");
        let mut renderer = Renderer::new(ctx, &self.model, self.mode)?;
        let frame = renderer.frame(self.settings(target), 0)?;
        Ok(Gpu { since_check: 0, frame, renderer })
    }

    fn record(&mut self, gpu: &mut Gpu, _ctx: &Context, target: Target, rec: &mut Recorder) -> Result<()> {
        let settings = self.settings(target);
        if (gpu.frame.settings.width, gpu.frame.settings.height) != (settings.width, settings.height) {
            gpu.frame = gpu.renderer.frame(settings, gpu.frame.capacity())?;
            gpu.since_check = 0;
        }
        gpu.frame.settings = settings;
        gpu.renderer.record(rec, &gpu.frame)?;
        Ok(())
    }

    fn image<'g>(&self, gpu: &'g Gpu) -> &'g Buffer<u32> {
        &gpu.frame.out
    }

    fn after_frame(&mut self, gpu: &mut Gpu, in_flight: &mut InFlight) -> Result<()> {
        // Now and then (and on the first frame of a size), wait for this frame and grow the
        // tile lists if they overflowed; an overflowing tile was still rendered correctly,
        // with all kernels.
        if gpu.since_check.is_multiple_of(30) {
            in_flight.wait()?;
            let entries = gpu.renderer.list_entries(&gpu.frame)?;
            gpu.renderer.fit_capacity(&mut gpu.frame, entries)?;
        }
        gpu.since_check += 1;
        Ok(())
    }

    fn title(&self, gpu: &Gpu, fps: f64) -> String {
        format!("smoe - {} kernels - {fps:.1} fps", gpu.renderer.kernels())
    }

    fn event(&mut self, event: &WindowEvent, window: PhysicalSize<u32>) {
        let m = &self.model;
        if let (WindowEvent::CursorMoved { position, .. }, 4) = (event, m.coord_dims) {
            // Across the window, the view moves from the first to the last captured view.
            let fx = (position.x / window.width.max(1) as f64).clamp(0.0, 1.0);
            let fy = (position.y / window.height.max(1) as f64).clamp(0.0, 1.0);
            let view = [fx * (m.extent[2] as f64 - 1.0), fy * (m.extent[3] as f64 - 1.0)];
            let uv = smoe::cpu::render::view_coords(m, view);
            self.uv = [uv[0] as f32, uv[1] as f32];
        }
    }
}

/// Opens the viewer on `model` and runs until the window closes (or `window.frames` were
/// shown).
pub fn run(model: Model, mode: Mode, window: kit::viewer::Options) -> Result<Shown, ViewerError<SmoeError>> {
    let (width, height) = (window.width, window.height);
    let centre = if model.coord_dims == 4 {
        [(model.extent[2] as f64 - 1.0) / 2.0, (model.extent[3] as f64 - 1.0) / 2.0]
    } else {
        [0.0; 2]
    };
    let uv = smoe::cpu::render::view_coords(&model, centre);
    let mut viewer = Viewer { model, mode, uv: [uv[0] as f32, uv[1] as f32], tile: None };
    let shown = kit::viewer::run(&mut viewer, window)?;
    let (width, height) = shown.size.unwrap_or((width, height));
    Ok(Shown { frames: shown.frames, width, height })
}
