//! `lightfield view`: a window (`kit::viewer`) showing a compressed light field from any viewpoint.
//! The views are decoded once on the GPU and stay in device memory; each frame the render
//! kernel (`lightfield::render`) writes the window's pixels straight into the buffer
//! `engine::present` copies to the swapchain. Drag with the mouse or press the arrow keys
//! to move between the captured views, turn the wheel to refocus, `[` and `]` to narrow or
//! widen the aperture, `R` to reset. The title shows the viewpoint and frames per second.
//! `--frames N --screenshot FILE` renders N frames, saves the last one and exits.

use std::time::Instant;

use engine::{Buffer, Context, Location, Recorder};
use kit::viewer::winit::dpi::PhysicalSize;
use kit::viewer::winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use kit::viewer::winit::keyboard::{Key, NamedKey};
use kit::viewer::{Scene, Target};
use lightfield::dictionary::Ensemble;
use lightfield::gpu::decode::device::decode_to_device;
use lightfield::gpu::render::GpuRenderer;
use lightfield::gpu::GpuCodec;
use lightfield::render::{PixelOrder, View, MAX_APERTURE, MAX_FOCUS};
use lightfield::{LfError, Result};

/// Views moved per arrow-key press.
const KEY_STEP: f32 = 0.1;
/// Pixels of disparity per wheel notch.
const WHEEL_STEP: f32 = 0.1;
/// Views of aperture per `[` or `]`.
const APERTURE_STEP: f32 = 0.5;

/// What the scene holds on the device. Field order is drop order: the pixels before the
/// renderer.
pub struct Gpu {
    out: Buffer<u32>,
    renderer: GpuRenderer,
}

/// The window's scene: a compressed light field, decoded into device memory when the
/// window opens, shown from a viewpoint the mouse and the keys move.
pub struct Viewer {
    /// The file's bytes until they are decoded.
    bytes: Vec<u8>,
    size: [usize; 4],
    ensemble: Ensemble,
    view: View,
    decode_ms: f64,
    drag: Option<(f64, f64)>,
    cursor: (f64, f64),
}

impl Scene for Viewer {
    type Gpu = Gpu;
    type Error = LfError;

    fn setup(&mut self, ctx: &Context, target: Target) -> Result<Gpu> {
        self.decode(ctx, target)
    }

    fn record(&mut self, gpu: &mut Gpu, ctx: &Context, target: Target, rec: &mut Recorder) -> Result<()> {
        if (target.width, target.height) != (self.view.width, self.view.height) {
            gpu.out = pixel_buffer(ctx, target)?;
            self.view.width = target.width;
            self.view.height = target.height;
        }
        let order = if target.bgra { PixelOrder::Bgra } else { PixelOrder::Rgba };
        gpu.renderer.record(rec, &self.view, order, &gpu.out)
    }

    fn image<'g>(&self, gpu: &'g Gpu) -> &'g Buffer<u32> {
        &gpu.out
    }

    fn title(&self, _gpu: &Gpu, fps: f64) -> String {
        let [u, v] = self.view.position;
        format!(
            "lightfield - view {u:.2},{v:.2} - focus {:.2} px - aperture {:.1} - {fps:.1} fps",
            self.view.focus, self.view.aperture
        )
    }

    fn event(&mut self, event: &WindowEvent, _window: PhysicalSize<u32>) {
        match event {
            WindowEvent::MouseInput { state: pressed, button: MouseButton::Left, .. } => {
                self.drag = (*pressed == ElementState::Pressed).then_some(self.cursor);
            }
            WindowEvent::CursorMoved { position, .. } => {
                self.cursor = (position.x, position.y);
                if let Some((x0, y0)) = self.drag {
                    // Dragging across the whole window crosses every captured view.
                    let [u, v, ..] = self.size;
                    let du = (position.y - y0) / self.view.height.max(1) as f64 * (u.max(2) - 1) as f64;
                    let dv = (position.x - x0) / self.view.width.max(1) as f64 * (v.max(2) - 1) as f64;
                    self.move_by(du as f32, dv as f32);
                    self.drag = Some(self.cursor);
                }
            }
            WindowEvent::MouseWheel { delta, .. } => {
                let notches = match delta {
                    MouseScrollDelta::LineDelta(_, y) => *y,
                    MouseScrollDelta::PixelDelta(p) => (p.y / 40.0) as f32,
                };
                self.view.focus = (self.view.focus + notches * WHEEL_STEP).clamp(-MAX_FOCUS, MAX_FOCUS);
            }
            WindowEvent::KeyboardInput { event, .. } if event.state == ElementState::Pressed => {
                self.key(&event.logical_key)
            }
            _ => {}
        }
    }
}

impl Viewer {
    /// The scene of a `.lfc` file's `bytes` of `size` (U, V, H, W) and `ensemble` (from
    /// [`lightfield::bitstream::open`]), first seen from `view`, whose size is the window's.
    pub fn new(bytes: Vec<u8>, size: [usize; 4], ensemble: Ensemble, view: View) -> Viewer {
        Viewer { bytes, size, ensemble, view, decode_ms: 0.0, drag: None, cursor: (0.0, 0.0) }
    }

    /// The viewpoint now.
    pub fn view(&self) -> View {
        self.view
    }

    /// How long the decode into device memory took.
    pub fn decode_ms(&self) -> f64 {
        self.decode_ms
    }

    /// Decodes the file once, from its bytes straight into device memory.
    fn decode(&mut self, ctx: &Context, target: Target) -> Result<Gpu> {
        let t0 = Instant::now();
        let codec = GpuCodec::new(ctx, &self.ensemble)?;
        let (views, _) = decode_to_device(&codec, &std::mem::take(&mut self.bytes))?;
        let renderer = GpuRenderer::from_device(ctx, views)?;
        self.decode_ms = t0.elapsed().as_secs_f64() * 1e3;
        let out = pixel_buffer(ctx, target)?;
        Ok(Gpu { out, renderer })
    }

    /// Moves the viewpoint by (du, dv) views, within the captured ones.
    fn move_by(&mut self, du: f32, dv: f32) {
        self.view = self.view.moved(du, dv, self.size);
    }

    fn key(&mut self, key: &Key) {
        let [u, v, ..] = self.size;
        let widest = (u.max(v) as f32).clamp(1.0, MAX_APERTURE);
        match key {
            Key::Named(NamedKey::ArrowLeft) => self.move_by(0.0, -KEY_STEP),
            Key::Named(NamedKey::ArrowRight) => self.move_by(0.0, KEY_STEP),
            Key::Named(NamedKey::ArrowUp) => self.move_by(-KEY_STEP, 0.0),
            Key::Named(NamedKey::ArrowDown) => self.move_by(KEY_STEP, 0.0),
            Key::Character(c) if c == "[" => self.view.aperture = (self.view.aperture - APERTURE_STEP).max(1.0),
            Key::Character(c) if c == "]" => self.view.aperture = (self.view.aperture + APERTURE_STEP).min(widest),
            Key::Character(c) if c.eq_ignore_ascii_case("r") => {
                self.view = View { width: self.view.width, height: self.view.height, ..View::centre(self.size) }
            }
            _ => {}
        }
    }
}

/// The frame's packed pixels (at least one).
fn pixel_buffer(ctx: &Context, target: Target) -> Result<Buffer<u32>> {
    let pixels = (target.width as usize * target.height as usize).max(1);
    Ok(ctx.buffer::<u32>(pixels, Location::Device, "window pixels")?)
}
