//! The compositor's active-pixel encoder (`composite::gpu::encode::GpuEncoder`): `ap_count`
//! (the region of interest and per-chunk counts) and `ap_scatter` (the payload), which run
//! one shape and are timed together, on a deterministic `size x size` frame with discs of
//! active pixels, its payload checked word for word against the CPU encoder. The encoder
//! reads its tuned shape under this entry's name ([`ENCODE`]).

use composite::frame::Frame;
use composite::gpu::encode::{EncodeConfig, GpuEncoder};
use engine::{Context, Result};

use super::{pattern, time_calls, Check, Config, Floor, Kernel, Measured, Param, Reps, Shader, Sizes};

/// The encoder's registry name, the key of its tuned shape in the tuning file.
pub use composite::gpu::encode::TUNING_KERNEL as ENCODE;

/// Both kernels of the encoder.
pub struct Encode;

to_engine_for!(composite::CompositeError, Unsupported);

/// A frame whose active pixels (depth < 1) form discs over about a third of it.
fn frame(edge: u32) -> Frame {
    let n = (edge * edge) as usize;
    let colors = pattern(n);
    let discs = [(0.3, 0.3, 0.2), (0.7, 0.6, 0.25), (0.4, 0.8, 0.1)];
    let depth = (0..n)
        .map(|i| {
            let (x, y) = ((i as u32 % edge) as f32 / edge as f32, (i as u32 / edge) as f32 / edge as f32);
            let inside = discs.iter().any(|&(cx, cy, r)| (x - cx).powi(2) + (y - cy).powi(2) < r * r);
            if inside {
                0.25 + 0.5 * x
            } else {
                composite::ap::BACKGROUND_DEPTH
            }
        })
        .collect();
    Frame { width: edge, height: edge, color: colors, depth }
}

impl Kernel for Encode {
    fn params(&self) -> Vec<Param> {
        let default = composite::gpu::encode::ENCODE_SHAPES[0];
        vec![
            Param::new(
                "workgroup",
                &[128, 256, 512, 1024],
                default.workgroup,
                "invocations per workgroup of both kernels",
            ),
            Param::new("per_lane", &[32, 64], default.per_lane, "pixels per lane of a chunk"),
            Param::new("batch", &[4, 8, 16], default.batch, "pixels per lane ap_scatter loads at once"),
        ]
    }
    fn sizes(&self) -> Sizes {
        Sizes { unit: "pixels (edge)", default: &[2160, 4320], tiny: [61, 97], max: 16384 }
    }
    fn footprint(&self, size: u64) -> u64 {
        // Colour and depth, host and device, and two payloads of up to 3 words per pixel.
        size * size * (8 + 8 + 2 * 12) + (1 << 20)
    }
    fn run(&self, ctx: &Context, config: &Config, size: u64, reps: Reps) -> Result<Measured> {
        let shape = EncodeConfig {
            workgroup: config.get("workgroup"),
            per_lane: config.get("per_lane"),
            batch: config.get("batch"),
        };
        let edge = size as u32;
        let mut encoder = GpuEncoder::with_config(ctx, shape).map_err(to_engine)?;
        let frame = frame(edge);
        let color = ctx.upload(&frame.color, "frame colour")?;
        let depth = ctx.upload(&frame.depth, "frame depth")?;
        let want = composite::cpu::encode::encode_parallel(&frame);
        let check = match encoder.encode(&color, &depth, edge, edge) {
            Ok((got, _, _)) => Check::exact(&got.words, &want.words),
            // A corrupt payload size is a wrong result of this shape, not a failed run.
            Err(composite::CompositeError::PayloadSize { .. }) => Check::exact(&[1], &[0]),
            Err(e) => return Err(to_engine(e)),
        };
        // The GPU times of both kernels (the payload's download is not timed).
        let times_ms = time_calls(ctx, reps, || {
            let t = encoder.encode(&color, &depth, edge, edge).map_err(to_engine)?.2;
            Ok(t.roi_ms + t.encode_ms)
        })?;
        // Every depth read once, the colour of every active pixel read, the payload written.
        let floor = Floor::Bytes(4 * size * size + 4 * want.active_pixels() as u64 + want.bytes() as u64);
        // ap_scatter, which writes the payload, is the larger part on dense frames.
        let shader =
            Shader { spirv: composite::shaders::AP_SCATTER, spec: vec![shape.workgroup, shape.per_lane, shape.batch] };
        Ok(Measured { times_ms, floor, check, shader: Some(shader) })
    }
}
