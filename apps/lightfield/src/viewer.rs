//! `lightfield view`: a winit window showing a compressed light field from any viewpoint.
//! The views are decoded once on the GPU and stay in device memory; each frame the render
//! kernel (`lightfield::render`) writes the window's pixels straight into the buffer
//! `engine::present` copies to the swapchain. Drag with the mouse or press the arrow keys
//! to move between the captured views, turn the wheel to refocus, `[` and `]` to narrow or
//! widen the aperture, `R` to reset. The title shows the viewpoint and frames per second.
//! `--frames N --screenshot FILE` renders N frames, saves the last one and exits.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, Result};
use engine::present::{PresentOutcome, Presenter};
use engine::{Buffer, Context, DeviceSelector, Location};
use lightfield::dictionary::Ensemble;
use lightfield::gpu::decode::device::decode_to_device;
use lightfield::gpu::render::GpuRenderer;
use lightfield::gpu::GpuCodec;
use lightfield::render::{unpack_rgb8, PixelOrder, View, MAX_APERTURE, MAX_FOCUS};
use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{Key, NamedKey};
use winit::window::{Window, WindowId};

/// Views moved per arrow-key press.
const KEY_STEP: f32 = 0.1;
/// Pixels of disparity per wheel notch.
const WHEEL_STEP: f32 = 0.1;
/// Views of aperture per `[` or `]`.
const APERTURE_STEP: f32 = 0.5;

pub struct Options {
    /// The `.lfc` file's bytes (decoded straight into device memory).
    pub bytes: Vec<u8>,
    /// Its size (U, V, H, W) and ensemble, from [`lightfield::bitstream::open`].
    pub size: [usize; 4],
    pub ensemble: Ensemble,
    /// The first viewpoint; its size is the window's.
    pub view: View,
    pub frames: Option<u64>,
    pub screenshot: Option<PathBuf>,
    pub device: DeviceSelector,
}

/// What the viewer showed.
pub struct Shown {
    pub frames: u64,
    pub view: View,
    pub decode_ms: f64,
}

// Field order is drop order: GPU objects before the window they present to.
struct State {
    /// The last frame's work; dropping it waits for it, so at most two frames are in flight.
    in_flight: Option<engine::Submission>,
    out: Buffer<u32>,
    renderer: GpuRenderer,
    presenter: Presenter,
    ctx: Context,
    window: Window,
}

struct App {
    opts: Options,
    state: Option<State>,
    error: Option<anyhow::Error>,
    view: View,
    frames: u64,
    decode_ms: f64,
    drag: Option<(f64, f64)>,
    cursor: (f64, f64),
    fps_since: Instant,
    fps_frames: u64,
}

impl App {
    fn size(&self) -> [usize; 4] {
        self.opts.size
    }

    fn start(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let attrs = Window::default_attributes()
            .with_title("lightfield")
            .with_inner_size(PhysicalSize::new(self.view.width, self.view.height));
        let window = event_loop.create_window(attrs)?;
        let size = window.inner_size();
        // SAFETY: the window lives in the same State and is dropped after the presenter.
        let (ctx, presenter) =
            unsafe { engine::present::open_window(&self.opts.device, &window, size.width, size.height)? };
        kit::report::set_device(&ctx.info().name);
        // Decoded once, from the file's bytes straight into device memory.
        let t0 = Instant::now();
        let codec = GpuCodec::new(&ctx, &self.opts.ensemble)?;
        let (views, _) = decode_to_device(&codec, &self.opts.bytes)?;
        let renderer = GpuRenderer::from_device(&ctx, views)?;
        self.opts.bytes = Vec::new();
        self.decode_ms = t0.elapsed().as_secs_f64() * 1e3;
        let out = pixel_buffer(&ctx, presenter.extent())?;
        window.request_redraw();
        self.state = Some(State { in_flight: None, out, renderer, presenter, ctx, window });
        Ok(())
    }

    fn draw(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let Some(state) = self.state.as_mut() else { return Ok(()) };
        let (w, h) = state.presenter.extent();
        if (w, h) != (self.view.width, self.view.height) {
            state.in_flight.take();
            state.out = pixel_buffer(&state.ctx, (w, h))?;
            self.view.width = w;
            self.view.height = h;
        }
        let order = if state.presenter.is_bgra() { PixelOrder::Bgra } else { PixelOrder::Rgba };
        let mut rec = state.ctx.recorder()?;
        state.renderer.record(&mut rec, &self.view, order, &state.out)?;
        let submission = rec.submit()?;
        let outcome = state.presenter.present(&state.out)?;
        // Replacing the previous frame's submission waits for it (not for this one).
        state.in_flight.replace(submission);
        if outcome == PresentOutcome::Presented {
            self.frames += 1;
            self.fps_frames += 1;
        }
        let elapsed = self.fps_since.elapsed().as_secs_f64();
        if elapsed > 0.5 {
            let fps = self.fps_frames as f64 / elapsed;
            let [u, v] = self.view.position;
            state.window.set_title(&format!(
                "lightfield - view {u:.2},{v:.2} - focus {:.2} px - aperture {:.1} - {fps:.1} fps",
                self.view.focus, self.view.aperture
            ));
            self.fps_since = Instant::now();
            self.fps_frames = 0;
        }
        if self.opts.frames.is_some_and(|n| self.frames >= n) {
            if let Some(s) = state.in_flight.take() {
                s.wait()?;
            }
            if let Some(path) = &self.opts.screenshot {
                let packed = state.ctx.download(&state.out)?;
                let rgb = unpack_rgb8(&packed[..(w * h) as usize], order);
                kit::image::save_rgb8(path, w as usize, h as usize, &rgb)?;
            }
            event_loop.exit();
        } else {
            state.window.request_redraw();
        }
        Ok(())
    }

    /// Moves the viewpoint by (du, dv) views, within the captured ones.
    fn move_by(&mut self, du: f32, dv: f32) {
        self.view = self.view.moved(du, dv, self.size());
    }

    fn key(&mut self, key: &Key) {
        let [u, v, ..] = self.size();
        let widest = (u.max(v) as f32).clamp(1.0, MAX_APERTURE);
        match key {
            Key::Named(NamedKey::ArrowLeft) => self.move_by(0.0, -KEY_STEP),
            Key::Named(NamedKey::ArrowRight) => self.move_by(0.0, KEY_STEP),
            Key::Named(NamedKey::ArrowUp) => self.move_by(-KEY_STEP, 0.0),
            Key::Named(NamedKey::ArrowDown) => self.move_by(KEY_STEP, 0.0),
            Key::Character(c) if c == "[" => self.view.aperture = (self.view.aperture - APERTURE_STEP).max(1.0),
            Key::Character(c) if c == "]" => self.view.aperture = (self.view.aperture + APERTURE_STEP).min(widest),
            Key::Character(c) if c.eq_ignore_ascii_case("r") => {
                self.view = View { width: self.view.width, height: self.view.height, ..View::centre(self.size()) }
            }
            _ => {}
        }
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
            WindowEvent::MouseInput { state: pressed, button: MouseButton::Left, .. } => {
                self.drag = (pressed == ElementState::Pressed).then_some(self.cursor);
            }
            WindowEvent::CursorMoved { position, .. } => {
                self.cursor = (position.x, position.y);
                if let Some((x0, y0)) = self.drag {
                    // Dragging across the whole window crosses every captured view.
                    let [u, v, ..] = self.size();
                    let du = (position.y - y0) / self.view.height.max(1) as f64 * (u.max(2) - 1) as f64;
                    let dv = (position.x - x0) / self.view.width.max(1) as f64 * (v.max(2) - 1) as f64;
                    self.move_by(du as f32, dv as f32);
                    self.drag = Some(self.cursor);
                }
            }
            WindowEvent::MouseWheel { delta, .. } => {
                let notches = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => (p.y / 40.0) as f32,
                };
                self.view.focus = (self.view.focus + notches * WHEEL_STEP).clamp(-MAX_FOCUS, MAX_FOCUS);
            }
            WindowEvent::KeyboardInput { event, .. } if event.state == ElementState::Pressed => {
                self.key(&event.logical_key)
            }
            WindowEvent::RedrawRequested => self.draw(event_loop)?,
            _ => {}
        }
        Ok(())
    }
}

/// The frame's packed pixels (at least one).
fn pixel_buffer(ctx: &Context, (w, h): (u32, u32)) -> Result<Buffer<u32>> {
    Ok(ctx.buffer::<u32>((w as usize * h as usize).max(1), Location::Device, "window pixels")?)
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
    let mut app = App {
        view: opts.view,
        opts,
        state: None,
        error: None,
        frames: 0,
        decode_ms: 0.0,
        drag: None,
        cursor: (0.0, 0.0),
        fps_since: Instant::now(),
        fps_frames: 0,
    };
    event_loop.run_app(&mut app)?;
    if let Some(e) = app.error {
        return Err(e);
    }
    Ok(Shown { frames: app.frames, view: app.view, decode_ms: app.decode_ms })
}
