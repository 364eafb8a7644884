//! `lightfield bench --viewer`: the viewer's frame loop without a window. The light field
//! sits in device memory as after `decode_to_device`; each frame renders a new viewpoint
//! (moving as a drag does) into the window-sized pixel buffer with the viewer's kernel,
//! then copies it into a second buffer of the same size, standing in for the swapchain
//! copy `engine::present` makes, with one frame in flight as in `lightfield view`. Reports
//! frames per second and ms per frame (wall and GPU), for interpolation (aperture 1) and a
//! refocus (aperture 3).

use std::time::Instant;

use serde_json::json;

use crate::error::Result;
use crate::gpu::render::GpuRenderer;
use crate::render::{PixelOrder, View};
use crate::synth::generate;

/// The shortest window side the viewer opens (`commands::MIN_WINDOW`).
const MIN_WINDOW: usize = 512;

pub(super) fn viewer(
    ctx: &engine::Context,
    views: (usize, usize),
    size: (usize, usize),
    frames: usize,
    device_name: &str,
    emit: &mut impl FnMut(serde_json::Value),
) -> Result<()> {
    let lf = generate(views, size, 11);
    let lf_size = [lf.u, lf.v, lf.h, lf.w];
    let renderer = GpuRenderer::new(ctx, &lf)?;
    drop(lf);
    let scale = MIN_WINDOW.div_ceil(size.0.max(size.1)).max(1);
    let (width, height) = ((size.0 * scale) as u32, (size.1 * scale) as u32);
    let pixels = width as usize * height as usize;
    let out = ctx.buffer::<u32>(pixels, engine::Location::Device, "bench window pixels")?;
    let swapchain = ctx.buffer::<u32>(pixels, engine::Location::Device, "bench stand-in swapchain")?;
    for aperture in [1.0f32, 3.0] {
        let start = View { aperture, focus: 0.5, width, height, ..View::centre(lf_size) };
        // Warm-up: pipeline caches and clocks.
        frame_loop(ctx, &renderer, &out, &swapchain, start, 10)?;
        let t0 = Instant::now();
        let gpu_ms = frame_loop(ctx, &renderer, &out, &swapchain, start, frames)?;
        let wall_ms = t0.elapsed().as_secs_f64() * 1e3;
        emit(json!({
            "bench": "viewer", "device": device_name,
            "size": format!("{}x{}x{}x{}x3", size.0, size.1, views.0, views.1),
            "window": format!("{width}x{height}"), "aperture": aperture, "frames": frames,
            "fps": frames as f64 / (wall_ms / 1e3), "ms_per_frame": wall_ms / frames as f64,
            "gpu_ms_per_frame": gpu_ms / frames as f64, "target_fps": 60,
            "note": "render kernel + a window-sized copy (the swapchain copy's stand-in), one frame in flight; no present",
        }));
    }
    Ok(())
}

/// Renders `frames` frames from `start`, moving along the views' diagonal and back; returns
/// the GPU ms of all of them.
fn frame_loop(
    ctx: &engine::Context,
    renderer: &GpuRenderer,
    out: &engine::Buffer<u32>,
    swapchain: &engine::Buffer<u32>,
    start: View,
    frames: usize,
) -> Result<f64> {
    let size = renderer.size();
    let mut in_flight: Option<engine::Submission> = None;
    let mut gpu_ms = 0.0;
    let mut view = start;
    for f in 0..frames {
        let step = if (f / 40) % 2 == 0 { 0.05 } else { -0.05 };
        view = view.moved(step, step, size);
        let mut rec = ctx.recorder()?;
        rec.enable_profiling(2)?;
        renderer.record(&mut rec, &view, PixelOrder::Bgra, out)?;
        rec.copy(out, swapchain);
        rec.mark("frame");
        // The previous frame is waited for once this one is queued, as in the viewer.
        if let Some(previous) = in_flight.replace(rec.submit()?) {
            gpu_ms += previous.wait_profiled()?.iter().map(|p| p.ms).sum::<f64>();
        }
    }
    if let Some(last) = in_flight {
        gpu_ms += last.wait_profiled()?.iter().map(|p| p.ms).sum::<f64>();
    }
    Ok(gpu_ms)
}
