//! `smoe view`: a winit window showing the model, rendered on the GPU every frame straight
//! into the swapchain's pixel buffer (engine::present does the copy and present). The
//! title shows frames per second; for light fields the mouse position picks the view.
//! `--frames N --screenshot FILE` renders N frames, saves the last one and exits.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, Result};
use engine::present::{PresentOutcome, Presenter};
use engine::{Context, DeviceSelector};
use smoe::gpu::Mode;
use smoe::gpu::{Frame, OutFormat, RenderSettings, Renderer};
use smoe::model::Model;
use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::WindowEvent;
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::window::{Window, WindowId};

pub struct Options {
    pub model: Model,
    pub mode: Mode,
    pub width: u32,
    pub height: u32,
    pub frames: Option<u64>,
    pub screenshot: Option<PathBuf>,
    pub device: DeviceSelector,
}

/// What the viewer showed.
pub struct Shown {
    pub frames: u64,
    pub width: u32,
    pub height: u32,
}

// Field order is drop order: GPU objects before the window they present to.
struct State {
    /// The last frame's compute work; dropping it waits for it, so at most two frames are
    /// in flight.
    in_flight: Option<engine::Submission>,
    /// Frames since the tile-list capacity was last checked.
    since_check: u64,
    frame: Frame,
    renderer: Renderer,
    presenter: Presenter,
    ctx: Context,
    window: Window,
}

struct App {
    opts: Options,
    state: Option<State>,
    error: Option<anyhow::Error>,
    frames: u64,
    uv: [f32; 2],
    /// The device's tuned tile edge (`kit::tuning`), else the renderer's default.
    tile: Option<u32>,
    fps_since: Instant,
    fps_frames: u64,
}

impl App {
    fn start(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let attrs = Window::default_attributes()
            .with_title("smoe")
            .with_inner_size(PhysicalSize::new(self.opts.width, self.opts.height));
        let window = event_loop.create_window(attrs)?;
        let size = window.inner_size();
        // SAFETY: the window lives in the same State and is dropped after the presenter.
        let (ctx, presenter) =
            unsafe { engine::present::open_window(&self.opts.device, &window, size.width, size.height)? };
        kit::report::set_device(&ctx.info().name);
        self.tile = kit::tuning::param(ctx.info(), "smoe.render", "block");
        let mut renderer = Renderer::new(&ctx, &self.opts.model, self.opts.mode)?;
        let frame = renderer.frame(self.settings(&presenter), 0)?;
        window.request_redraw();
        self.state = Some(State { in_flight: None, since_check: 0, frame, renderer, presenter, ctx, window });
        Ok(())
    }

    fn settings(&self, presenter: &Presenter) -> RenderSettings {
        let (w, h) = presenter.extent();
        let format = if presenter.is_bgra() { OutFormat::Bgra8 } else { OutFormat::Rgba8 };
        let defaults = RenderSettings::new(w, h);
        RenderSettings { uv: self.uv, format, tile: self.tile.unwrap_or(defaults.tile), ..defaults }
    }

    fn draw(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let Some(state) = self.state.as_ref() else { return Ok(()) };
        let settings = self.settings(&state.presenter);
        let state = self.state.as_mut().expect("checked above");
        let size_changed =
            (state.frame.settings.width, state.frame.settings.height) != (settings.width, settings.height);
        if size_changed {
            state.in_flight.take();
            state.frame = state.renderer.frame(settings, state.frame.capacity())?;
            state.since_check = 0;
        }
        state.frame.settings = settings;
        let mut rec = state.ctx.recorder()?;
        state.renderer.record(&mut rec, &state.frame)?;
        let submission = rec.submit()?;
        let outcome = state.presenter.present(&state.frame.out)?;
        // Replacing the previous frame's submission waits for it (not for this one).
        state.in_flight.replace(submission);
        // Now and then (and on the first frame of a size), wait for this frame and grow the
        // tile lists if they overflowed; an overflowing tile was still rendered correctly,
        // with all kernels.
        if state.since_check.is_multiple_of(30) {
            if let Some(s) = state.in_flight.take() {
                s.wait()?;
            }
            let entries = state.renderer.list_entries(&state.frame)?;
            state.renderer.fit_capacity(&mut state.frame, entries)?;
        }
        state.since_check += 1;
        if outcome == PresentOutcome::Presented {
            self.frames += 1;
            self.fps_frames += 1;
        }
        let elapsed = self.fps_since.elapsed().as_secs_f64();
        if elapsed > 0.5 {
            let fps = self.fps_frames as f64 / elapsed;
            state.window.set_title(&format!("smoe - {} kernels - {fps:.1} fps", state.renderer.kernels()));
            self.fps_since = Instant::now();
            self.fps_frames = 0;
        }
        if self.opts.frames.is_some_and(|n| self.frames >= n) {
            if let Some(s) = state.in_flight.take() {
                s.wait()?;
            }
            if let Some(path) = &self.opts.screenshot {
                let packed = state.ctx.download(&state.frame.out)?;
                let bgra = settings.format == OutFormat::Bgra8;
                let rgb: Vec<u8> = packed
                    .iter()
                    .flat_map(|&p| {
                        let b = p.to_le_bytes();
                        if bgra {
                            [b[2], b[1], b[0]]
                        } else {
                            [b[0], b[1], b[2]]
                        }
                    })
                    .collect();
                kit::image::save_rgb8(path, settings.width as usize, settings.height as usize, &rgb)?;
            }
            event_loop.exit();
        } else {
            state.window.request_redraw();
        }
        Ok(())
    }

    fn handle(&mut self, event_loop: &ActiveEventLoop, event: WindowEvent) -> Result<()> {
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => {
                if let Some(state) = self.state.as_mut() {
                    if size.width > 0 && size.height > 0 {
                        state.presenter.resize(size.width, size.height)?;
                    }
                }
            }
            WindowEvent::CursorMoved { position, .. } => {
                let m = &self.opts.model;
                if let (Some(state), 4) = (self.state.as_ref(), m.coord_dims) {
                    let size = state.window.inner_size();
                    // Across the window, the view moves from the first to the last captured view.
                    let fx = (position.x / size.width.max(1) as f64).clamp(0.0, 1.0);
                    let fy = (position.y / size.height.max(1) as f64).clamp(0.0, 1.0);
                    let view = [fx * (m.extent[2] as f64 - 1.0), fy * (m.extent[3] as f64 - 1.0)];
                    let uv = smoe::cpu::render::view_coords(m, view);
                    self.uv = [uv[0] as f32, uv[1] as f32];
                }
            }
            WindowEvent::RedrawRequested => self.draw(event_loop)?,
            _ => {}
        }
        Ok(())
    }
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.state.is_none() {
            if let Err(e) = self.start(event_loop) {
                self.error = Some(e);
                event_loop.exit();
            }
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        if let Err(e) = self.handle(event_loop, event) {
            self.error = Some(e);
            event_loop.exit();
        }
    }
}

/// Opens the viewer and runs until the window closes (or `frames` were shown).
pub fn run(opts: Options) -> Result<Shown> {
    let event_loop = EventLoop::new().map_err(|e| anyhow!("cannot open a window (is a display available?): {e}"))?;
    event_loop.set_control_flow(ControlFlow::Poll);
    let uv = smoe::cpu::render::view_coords(
        &opts.model,
        if opts.model.coord_dims == 4 {
            [(opts.model.extent[2] as f64 - 1.0) / 2.0, (opts.model.extent[3] as f64 - 1.0) / 2.0]
        } else {
            [0.0; 2]
        },
    );
    let mut app = App {
        opts,
        state: None,
        error: None,
        frames: 0,
        uv: [uv[0] as f32, uv[1] as f32],
        tile: None,
        fps_since: Instant::now(),
        fps_frames: 0,
    };
    event_loop.run_app(&mut app)?;
    if let Some(e) = app.error {
        return Err(e);
    }
    let size = app.state.as_ref().map(|s| s.frame.settings);
    let (width, height) = size.map_or((app.opts.width, app.opts.height), |s| (s.width, s.height));
    Ok(Shown { frames: app.frames, width, height })
}
