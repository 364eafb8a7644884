//! The render stage on the GPU (`render.comp`, one invocation per output pixel in 16 x 16
//! tiles), the twin of [`crate::cpu::render`], on views held in device memory.

use engine::{Buffer, Context, Kernel, Location, Recorder};

use crate::error::{LfError, Result};
use crate::lightfield::LightField;
use crate::render::{PixelOrder, View};

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct RenderPush {
    n_u: u32,
    n_v: u32,
    height: u32,
    width: u32,
    out_w: u32,
    out_h: u32,
    bgra: u32,
    pad: u32,
    pu: f32,
    pv: f32,
    focus: f32,
    aperture: f32,
    scale_x: f32,
    scale_y: f32,
}

/// Workgroup edge of render.comp.
const TILE: u32 = 16;

/// The render kernel with a light field's views resident in device memory.
pub struct GpuRenderer {
    ctx: Context,
    pipeline: Kernel<RenderPush>,
    views: Buffer<f32>,
    size: [usize; 4],
}

impl GpuRenderer {
    /// Uploads the views of `lf` (f32, as decoded) and builds the pipeline.
    pub fn new(ctx: &Context, lf: &LightField) -> Result<GpuRenderer> {
        ctx.check_binding(lf.data.len() as u64 * 4, "the decoded views")?;
        let views = ctx.upload(&lf.data, "decoded views")?;
        GpuRenderer::from_device(
            ctx,
            crate::gpu::decode::device::DeviceLightField { views, size: [lf.u, lf.v, lf.h, lf.w] },
        )
    }

    /// Renders views already in device memory (from [`crate::gpu::decode::device::decode_to_device`]).
    pub fn from_device(ctx: &Context, lf: crate::gpu::decode::device::DeviceLightField) -> Result<GpuRenderer> {
        let pipeline = ctx.kernel(&crate::shaders::kernels::RENDER, &[])?;
        Ok(GpuRenderer { ctx: ctx.clone(), pipeline, views: lf.views, size: lf.size })
    }

    /// The light field's size (U, V, H, W).
    pub fn size(&self) -> [usize; 4] {
        self.size
    }

    /// Refuses an output buffer of `pixels` that the device cannot bind whole: the kernel
    /// would write past the bound range (a 16384 x 16384 frame is 1 GiB; lavapipe binds 128 MiB).
    fn check_output(&self, pixels: usize, view: &View) -> Result<()> {
        Ok(self.ctx.check_binding(pixels as u64 * 4, &format!("a {}x{} frame", view.width, view.height))?)
    }

    /// Records the rendering of `view` into `out` (at least width * height pixels).
    pub fn record(&self, rec: &mut Recorder, view: &View, order: PixelOrder, out: &Buffer<u32>) -> Result<()> {
        view.check(self.size)?;
        if out.len() < view.width as usize * view.height as usize {
            return Err(LfError::FrameBuffer { pixels: out.len(), width: view.width, height: view.height });
        }
        self.check_output(out.len(), view)?;
        let [n_u, n_v, height, width] = self.size.map(|s| s as u32);
        let [scale_x, scale_y] = view.scale(self.size);
        let push = RenderPush {
            n_u,
            n_v,
            height,
            width,
            out_w: view.width,
            out_h: view.height,
            bgra: (order == PixelOrder::Bgra) as u32,
            pad: 0,
            pu: view.position[0],
            pv: view.position[1],
            focus: view.focus,
            aperture: view.aperture,
            scale_x,
            scale_y,
        };
        let groups = [view.width.div_ceil(TILE), view.height.div_ceil(TILE), 1];
        rec.pass(&self.pipeline).read(&self.views).write(out).push(&push).dispatch(groups)?;
        Ok(())
    }

    /// Renders `view` and reads it back: `width * height` packed pixels.
    pub fn render(&self, view: &View, order: PixelOrder) -> Result<Vec<u32>> {
        let n = view.width as usize * view.height as usize;
        self.check_output(n, view)?;
        let out = self.ctx.buffer::<u32>(n, Location::Device, "rendered view")?;
        let read = self.ctx.buffer::<u32>(n, Location::Download, "rendered view readback")?;
        let mut rec = self.ctx.recorder()?;
        self.record(&mut rec, view, order, &out)?;
        rec.copy(&out, &read);
        rec.host_read(&read);
        rec.submit()?.wait()?;
        Ok(read.mapped()?.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::render::render_cpu;

    fn channels(p: u32) -> [i32; 4] {
        p.to_le_bytes().map(i32::from)
    }

    /// `render.comp` against [`render_cpu`] on a synthetic light field at awkward sizes,
    /// viewpoints, focuses and apertures, both byte orders: every channel of every pixel
    /// within 1 of 255 (the same f32 operations in the same order, but results an ulp apart
    /// round to neighbouring bytes).
    #[test]
    fn gpu_render_matches_cpu_at_awkward_sizes() {
        let ctx = engine::testing::context();
        // 3 x 5 views of 19 x 11 pixels, outputs not multiples of the 16 x 16 workgroup.
        let lf = crate::synth::generate((3, 5), (19, 11), 6);
        let gpu = GpuRenderer::new(ctx, &lf).unwrap();
        let base = View::centre([3, 5, 11, 19]);
        let views = [
            base,
            View { position: [0.3, 3.7], ..base },
            View { position: [1.5, 2.25], focus: -1.75, aperture: 2.5, ..base },
            View { position: [2.0, 0.0], focus: 0.6, aperture: 7.0, width: 33, height: 17 },
            View { position: [0.9, 4.0], focus: 3.0, aperture: 1.0, width: 7, height: 29 },
        ];
        for view in views {
            for order in [PixelOrder::Rgba, PixelOrder::Bgra] {
                let cpu = render_cpu(&lf, &view, order).unwrap();
                let got = gpu.render(&view, order).unwrap();
                assert_eq!(got.len(), cpu.len());
                for (i, (&a, &b)) in got.iter().zip(&cpu).enumerate() {
                    let (a, b) = (channels(a), channels(b));
                    let worst = (0..4).map(|k| (a[k] - b[k]).abs()).max().unwrap();
                    assert!(worst <= 1, "{view:?} {order:?} pixel {i}: GPU {a:?}, CPU {b:?}");
                }
            }
        }
        engine::testing::assert_no_validation_messages();
    }

    /// A frame larger than the device binds in one buffer is refused, not rendered past it.
    #[test]
    fn frames_the_device_cannot_bind_are_refused() {
        let ctx = engine::testing::context();
        let lf = crate::synth::generate((2, 2), (5, 4), 1);
        let gpu = GpuRenderer::new(ctx, &lf).unwrap();
        let range = ctx.info().max_storage_buffer_range;
        // The smallest square frame of more than `range` bytes, if the largest frame is one.
        let side = ((range / 4) as f64).sqrt() as u32 + 1;
        if side > 16384 {
            return;
        }
        let view = View { width: side, height: side, ..View::centre([2, 2, 4, 5]) };
        let err = gpu.render(&view, PixelOrder::Rgba).unwrap_err().to_string();
        assert!(err.contains("binds at most"), "{err}");
        engine::testing::assert_no_validation_messages();
    }
}
