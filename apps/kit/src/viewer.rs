//! The window every viewer shares (feature `viewer`): a winit window and the device's
//! presenter (`engine::present::open_window`), a loop that renders each frame straight into
//! the swapchain's pixel buffer with the previous frame's work still in flight, close and
//! resize handling, frames per second in the title, and `--frames N --screenshot FILE`
//! (render N frames, save the last one, exit). An app supplies a [`Scene`]: its GPU setup,
//! how it records a frame, the pixels to show, and its own input handling. A failure comes
//! back as a [`ViewerError`]: the window's or the screenshot's (`KitError`), the device's
//! (`EngineError`), or the scene's own (its app's error type).

use std::path::PathBuf;
use std::time::Instant;

use engine::present::{PresentOutcome, Presenter};
use engine::{Buffer, Context, DeviceSelector, Recorder, Submission};
use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::WindowEvent;
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::window::{Window, WindowId};

use crate::KitError;

pub use winit;

/// Why the viewer stopped short: the window system or the screenshot, the device, or a step
/// of the scene, each as its own typed error.
#[derive(Debug, thiserror::Error)]
pub enum ViewerError<E> {
    /// No window could be opened, or the screenshot could not be written.
    #[error(transparent)]
    Kit(#[from] KitError),
    /// The device: opening it for the window, recording, submitting, presenting.
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    /// The scene's [`Scene::setup`], [`Scene::record`] or [`Scene::after_frame`].
    #[error(transparent)]
    Scene(E),
}

impl<E: From<KitError> + From<engine::EngineError>> ViewerError<E> {
    /// The error as the app's own error type, which holds kit's and the engine's.
    pub fn into_app(self) -> E {
        match self {
            ViewerError::Kit(e) => e.into(),
            ViewerError::Engine(e) => e.into(),
            ViewerError::Scene(e) => e,
        }
    }
}

/// The window's pixels as the presenter takes them: its size and byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub width: u32,
    pub height: u32,
    /// Pixels are packed B, G, R, A (else R, G, B, A) from the lowest byte.
    pub bgra: bool,
}

impl Target {
    fn of(presenter: &Presenter) -> Self {
        let (width, height) = presenter.extent();
        Target { width, height, bgra: presenter.is_bgra() }
    }
}

/// The last frame's GPU work; replacing or dropping it waits for it, so at most two frames
/// are in flight.
#[derive(Default)]
pub struct InFlight(Option<Submission>);

impl InFlight {
    /// Waits until the work submitted last has finished.
    pub fn wait(&mut self) -> engine::Result<()> {
        if let Some(s) = self.0.take() {
            s.wait()?;
        }
        Ok(())
    }
}

/// What an app shows in the window.
pub trait Scene {
    /// The GPU side, built once the device exists.
    type Gpu;
    /// What the scene's own steps fail with (the app's error type); [`run`] returns it as
    /// [`ViewerError::Scene`].
    type Error;
    /// Builds the GPU side for the window's first size.
    fn setup(&mut self, ctx: &Context, target: Target) -> Result<Self::Gpu, Self::Error>;
    /// Records one frame for `target` into `rec`. When the size changed since the last frame
    /// the previous frame's work has finished, so its buffers may be replaced.
    fn record(
        &mut self,
        gpu: &mut Self::Gpu,
        ctx: &Context,
        target: Target,
        rec: &mut Recorder,
    ) -> Result<(), Self::Error>;
    /// The packed pixels (at least `width * height`) the frame just recorded writes.
    fn image<'g>(&self, gpu: &'g Self::Gpu) -> &'g Buffer<u32>;
    /// Runs after each frame is submitted and presented; `in_flight` holds that frame's work.
    fn after_frame(&mut self, _gpu: &mut Self::Gpu, _in_flight: &mut InFlight) -> Result<(), Self::Error> {
        Ok(())
    }
    /// The window's title, with the frames per second measured lately.
    fn title(&self, gpu: &Self::Gpu, fps: f64) -> String;
    /// Any window event the viewer itself does not handle (input), with the window's size.
    fn event(&mut self, _event: &WindowEvent, _window: PhysicalSize<u32>) {}
}

/// The window and when to stop.
pub struct Options {
    /// The title until the first frames per second are known.
    pub title: String,
    pub width: u32,
    pub height: u32,
    /// Stop after this many presented frames.
    pub frames: Option<u64>,
    /// Save the last frame here (with `frames`).
    pub screenshot: Option<PathBuf>,
    pub device: DeviceSelector,
}

/// What the viewer showed.
pub struct Shown {
    pub frames: u64,
    /// The size of the last frame, or `None` when the window never opened.
    pub size: Option<(u32, u32)>,
}

// Field order is drop order: GPU objects before the window they present to.
struct State<G> {
    in_flight: InFlight,
    gpu: G,
    target: Target,
    presenter: Presenter,
    ctx: Context,
    window: Window,
}

struct App<'s, S: Scene> {
    scene: &'s mut S,
    opts: Options,
    state: Option<State<S::Gpu>>,
    error: Option<ViewerError<S::Error>>,
    frames: u64,
    fps_since: Instant,
    fps_frames: u64,
}

impl<S: Scene> App<'_, S> {
    fn start(&mut self, event_loop: &ActiveEventLoop) -> Result<(), ViewerError<S::Error>> {
        let attrs = Window::default_attributes()
            .with_title(&self.opts.title)
            .with_inner_size(PhysicalSize::new(self.opts.width, self.opts.height));
        let window = event_loop.create_window(attrs).map_err(|e| KitError::Window(e.to_string()))?;
        let size = window.inner_size();
        // SAFETY: the window lives in the same State and is dropped after the presenter.
        let (ctx, presenter) =
            unsafe { engine::present::open_window(&self.opts.device, &window, size.width, size.height)? };
        crate::report::set_device(&ctx.info().name);
        let target = Target::of(&presenter);
        let gpu = self.scene.setup(&ctx, target).map_err(ViewerError::Scene)?;
        window.request_redraw();
        self.state = Some(State { in_flight: InFlight::default(), gpu, target, presenter, ctx, window });
        Ok(())
    }

    fn draw(&mut self, event_loop: &ActiveEventLoop) -> Result<(), ViewerError<S::Error>> {
        let Some(state) = self.state.as_mut() else { return Ok(()) };
        let target = Target::of(&state.presenter);
        if target != state.target {
            // The scene may replace buffers the previous frame still uses.
            state.in_flight.wait()?;
            state.target = target;
        }
        let mut rec = state.ctx.recorder()?;
        self.scene.record(&mut state.gpu, &state.ctx, target, &mut rec).map_err(ViewerError::Scene)?;
        let submission = rec.submit()?;
        let outcome = state.presenter.present(self.scene.image(&state.gpu))?;
        // Replacing the previous frame's submission waits for it (not for this one).
        state.in_flight.0.replace(submission);
        self.scene.after_frame(&mut state.gpu, &mut state.in_flight).map_err(ViewerError::Scene)?;
        if outcome == PresentOutcome::Presented {
            self.frames += 1;
            self.fps_frames += 1;
        }
        let elapsed = self.fps_since.elapsed().as_secs_f64();
        if elapsed > 0.5 {
            let fps = self.fps_frames as f64 / elapsed;
            state.window.set_title(&self.scene.title(&state.gpu, fps));
            self.fps_since = Instant::now();
            self.fps_frames = 0;
        }
        if self.opts.frames.is_some_and(|n| self.frames >= n) {
            state.in_flight.wait()?;
            if let Some(path) = &self.opts.screenshot {
                let pixels = (target.width as usize) * (target.height as usize);
                let packed = state.ctx.download_range(self.scene.image(&state.gpu), 0, pixels)?;
                let rgb = unpack_rgb8(&packed, target.bgra);
                crate::image::save_rgb8(path, target.width as usize, target.height as usize, &rgb)?;
            }
            event_loop.exit();
        } else {
            state.window.request_redraw();
        }
        Ok(())
    }

    fn handle(&mut self, event_loop: &ActiveEventLoop, event: WindowEvent) -> Result<(), ViewerError<S::Error>> {
        let Some(state) = self.state.as_mut() else { return Ok(()) };
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => {
                if size.width > 0 && size.height > 0 {
                    state.presenter.resize(size.width, size.height)?;
                }
            }
            WindowEvent::RedrawRequested => self.draw(event_loop)?,
            event => self.scene.event(&event, state.window.inner_size()),
        }
        Ok(())
    }

    fn fail(&mut self, event_loop: &ActiveEventLoop, result: Result<(), ViewerError<S::Error>>) {
        if let Err(e) = result {
            self.error = Some(e);
            event_loop.exit();
        }
    }
}

impl<S: Scene> ApplicationHandler for App<'_, S> {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.state.is_none() {
            let result = self.start(event_loop);
            self.fail(event_loop, result);
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        let result = self.handle(event_loop, event);
        self.fail(event_loop, result);
    }
}

/// 8-bit RGB bytes of packed pixels.
pub fn unpack_rgb8(pixels: &[u32], bgra: bool) -> Vec<u8> {
    pixels
        .iter()
        .flat_map(|&p| {
            let b = p.to_le_bytes();
            if bgra {
                [b[2], b[1], b[0]]
            } else {
                [b[0], b[1], b[2]]
            }
        })
        .collect()
}

/// Why no window opened, in the user's terms: without a display the windowing library's
/// own message is a source location of its, not a cause.
fn no_window(e: &winit::error::EventLoopError) -> KitError {
    let display = ["DISPLAY", "WAYLAND_DISPLAY"].iter().any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()));
    KitError::Window(if display {
        e.to_string()
    } else {
        "no display (neither DISPLAY nor WAYLAND_DISPLAY is set; over ssh use -X, headless use xvfb-run)".into()
    })
}

/// Opens the window and runs until it closes (or `frames` were shown).
pub fn run<S: Scene>(scene: &mut S, opts: Options) -> Result<Shown, ViewerError<S::Error>> {
    let event_loop = EventLoop::new().map_err(|e| no_window(&e))?;
    event_loop.set_control_flow(ControlFlow::Poll);
    let mut app = App { scene, opts, state: None, error: None, frames: 0, fps_since: Instant::now(), fps_frames: 0 };
    event_loop.run_app(&mut app).map_err(|e| KitError::Window(e.to_string()))?;
    if let Some(e) = app.error {
        return Err(e);
    }
    let size = app.state.as_ref().map(|s| (s.target.width, s.target.height));
    Ok(Shown { frames: app.frames, size })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An app's error enum as the viewers' apps have one.
    #[derive(Debug, thiserror::Error)]
    enum AppError {
        #[error(transparent)]
        Kit(#[from] KitError),
        #[error(transparent)]
        Engine(#[from] engine::EngineError),
        #[error("the scene's own")]
        Own,
    }

    #[test]
    fn each_failure_becomes_its_variant_of_the_apps_error() {
        let kit = ViewerError::<AppError>::Kit(KitError::Window("no display".into())).into_app();
        assert!(matches!(kit, AppError::Kit(KitError::Window(_))), "{kit:?}");
        let engine = ViewerError::<AppError>::Engine(engine::EngineError::NoDevice).into_app();
        assert!(matches!(engine, AppError::Engine(engine::EngineError::NoDevice)), "{engine:?}");
        let own = ViewerError::Scene(AppError::Own).into_app();
        assert!(matches!(own, AppError::Own), "{own:?}");
        assert_eq!(
            ViewerError::<AppError>::from(KitError::Window("no display".into())).to_string(),
            "cannot open a window: no display"
        );
    }
}
