//! Rendering a light field from any viewpoint (`lightfield view` and `lightfield render`):
//! each output pixel blends the views within `aperture` of the virtual viewpoint with tent
//! weights (aperture 1: bilinear interpolation of the four nearest views; at an integer
//! viewpoint, that view alone), each view sampled bilinearly at the pixel shifted by
//! `focus` pixels per view of distance, so a wider aperture refocuses on the plane of that
//! disparity (shift-and-add). [`render_cpu`] is the reference; [`GpuRenderer`] runs
//! `shaders/lightfield/render.comp` on views held in device memory, with the same
//! operation order.

use rayon::prelude::*;

use engine::{Buffer, ComputePipeline, Context, Location, Recorder};

use crate::error::{LfError, Result};
use crate::lightfield::LightField;
use crate::lightfield::COLOURS;

/// Largest |focus| in pixels per view: beyond it every shifted sample is clamped to an edge.
pub const MAX_FOCUS: f32 = 1.0e4;
/// Largest aperture radius in views.
pub const MAX_APERTURE: f32 = 1024.0;

/// Byte order of packed output pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PixelOrder {
    /// R in the lowest byte (R, G, B, A in memory).
    Rgba,
    /// B in the lowest byte (a BGRA swapchain).
    Bgra,
}

/// A viewpoint and how to render it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    /// Position in the view grid: row u, column v (fractional between captured views).
    pub position: [f32; 2],
    /// Disparity in pixels per view of the plane in focus: view (i, j) is sampled at
    /// (x + focus * (j - v), y + focus * (i - u)).
    pub focus: f32,
    /// Radius in views of the blend (at least 1).
    pub aperture: f32,
    /// Output size in pixels (the views are scaled to it).
    pub width: u32,
    pub height: u32,
}

impl View {
    /// The centre view of `lf` at its own size, in focus at disparity 0, aperture 1.
    pub fn centre(lf_size: [usize; 4]) -> View {
        let [u, v, h, w] = lf_size;
        View {
            position: [(u as f32 - 1.0) / 2.0, (v as f32 - 1.0) / 2.0],
            focus: 0.0,
            aperture: 1.0,
            width: w as u32,
            height: h as u32,
        }
    }

    /// Refuses a viewpoint outside the captured views or values the kernel cannot take.
    pub fn check(&self, lf_size: [usize; 4]) -> Result<()> {
        let (last_u, last_v) = (lf_size[0] as f32 - 1.0, lf_size[1] as f32 - 1.0);
        let [u, v] = self.position;
        if !(0.0..=last_u).contains(&u) || !(0.0..=last_v).contains(&v) {
            return Err(LfError::Invalid(format!(
                "view {u},{v} is outside the captured views (rows 0 to {last_u}, columns 0 to {last_v})"
            )));
        }
        if !(-MAX_FOCUS..=MAX_FOCUS).contains(&self.focus) {
            return Err(LfError::Invalid(format!("focus {} is not within +-{MAX_FOCUS}", self.focus)));
        }
        if !(1.0..=MAX_APERTURE).contains(&self.aperture) {
            return Err(LfError::Invalid(format!("aperture {} is not within 1 to {MAX_APERTURE}", self.aperture)));
        }
        if !(1..=16384).contains(&self.width) || !(1..=16384).contains(&self.height) {
            return Err(LfError::Invalid(format!("output {}x{} is not within 1 to 16384", self.width, self.height)));
        }
        Ok(())
    }

    /// View pixels per output pixel along x and y.
    fn scale(&self, lf_size: [usize; 4]) -> [f32; 2] {
        [lf_size[3] as f32 / self.width as f32, lf_size[2] as f32 / self.height as f32]
    }

    /// The same view moved by (du, dv) views, kept within the captured views.
    pub fn moved(&self, du: f32, dv: f32, lf_size: [usize; 4]) -> View {
        let u = (self.position[0] + du).clamp(0.0, lf_size[0] as f32 - 1.0);
        let v = (self.position[1] + dv).clamp(0.0, lf_size[1] as f32 - 1.0);
        View { position: [u, v], ..*self }
    }
}

fn to_u8(v: f32) -> u32 {
    (v.clamp(0.0, 1.0) * 255.0 + 0.5) as u32
}

/// Packs RGB in [0, 1] into one pixel (alpha 255).
fn pack(c: [f32; 3], order: PixelOrder) -> u32 {
    let [r, g, b] = c.map(to_u8);
    match order {
        PixelOrder::Rgba => r | (g << 8) | (b << 16) | (255 << 24),
        PixelOrder::Bgra => b | (g << 8) | (r << 16) | (255 << 24),
    }
}

/// Bilinear sample of view `view` (row-major index) at (sx, sy), clamped to the edge.
fn sample_view(lf: &LightField, view: usize, sx: f32, sy: f32) -> [f32; 3] {
    let sx = sx.clamp(0.0, (lf.w - 1) as f32);
    let sy = sy.clamp(0.0, (lf.h - 1) as f32);
    let (x0, y0) = (sx.floor() as usize, sy.floor() as usize);
    let (x1, y1) = ((x0 + 1).min(lf.w - 1), (y0 + 1).min(lf.h - 1));
    let (fx, fy) = (sx - x0 as f32, sy - y0 as f32);
    let texel = |x: usize, y: usize| {
        let i = ((view * lf.h + y) * lf.w + x) * COLOURS;
        [lf.data[i], lf.data[i + 1], lf.data[i + 2]]
    };
    let (a, b, c, d) = (texel(x0, y0), texel(x1, y0), texel(x0, y1), texel(x1, y1));
    std::array::from_fn(|k| {
        let top = (1.0 - fx) * a[k] + fx * b[k];
        let bottom = (1.0 - fx) * c[k] + fx * d[k];
        (1.0 - fy) * top + fy * bottom
    })
}

/// The first and last view index within `aperture` of `p` along an axis of `n` views.
fn window(p: f32, aperture: f32, n: usize) -> (i64, i64) {
    ((p - aperture).ceil().max(0.0) as i64, ((p + aperture).floor() as i64).min(n as i64 - 1))
}

/// Renders `view` of `lf` on the CPU: `width * height` packed pixels, row 0 at the top.
pub fn render_cpu(lf: &LightField, view: &View, order: PixelOrder) -> Result<Vec<u32>> {
    let size = [lf.u, lf.v, lf.h, lf.w];
    view.check(size)?;
    let [scale_x, scale_y] = view.scale(size);
    let [pu, pv] = view.position;
    let r = view.aperture;
    let (i0, i1) = window(pu, r, lf.u);
    let (j0, j1) = window(pv, r, lf.v);
    let (w, h) = (view.width as usize, view.height as usize);
    let mut out = vec![0u32; w * h];
    out.par_chunks_mut(w).enumerate().for_each(|(oy, row)| {
        let y = (oy as f32 + 0.5) * scale_y - 0.5;
        for (ox, px) in row.iter_mut().enumerate() {
            let x = (ox as f32 + 0.5) * scale_x - 0.5;
            let mut acc = [0f32; 3];
            let mut wsum = 0f32;
            for i in i0..=i1 {
                let wi = 1.0 - (i as f32 - pu).abs() / r;
                if wi <= 0.0 {
                    continue;
                }
                let sy = y + view.focus * (i as f32 - pu);
                for j in j0..=j1 {
                    let wj = 1.0 - (j as f32 - pv).abs() / r;
                    if wj <= 0.0 {
                        continue;
                    }
                    let wt = wi * wj;
                    let sx = x + view.focus * (j as f32 - pv);
                    let c = sample_view(lf, i as usize * lf.v + j as usize, sx, sy);
                    (0..3).for_each(|k| acc[k] += wt * c[k]);
                    wsum += wt;
                }
            }
            *px = pack(acc.map(|a| a / wsum), order);
        }
    });
    Ok(out)
}

/// 8-bit RGB bytes of packed pixels.
pub fn unpack_rgb8(pixels: &[u32], order: PixelOrder) -> Vec<u8> {
    pixels
        .iter()
        .flat_map(|&p| {
            let b = p.to_le_bytes();
            match order {
                PixelOrder::Rgba => [b[0], b[1], b[2]],
                PixelOrder::Bgra => [b[2], b[1], b[0]],
            }
        })
        .collect()
}

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
    pipeline: ComputePipeline,
    views: Buffer<f32>,
    size: [usize; 4],
}

impl GpuRenderer {
    /// Uploads the views of `lf` (f32, as decoded) and builds the pipeline.
    pub fn new(ctx: &Context, lf: &LightField) -> Result<GpuRenderer> {
        let bytes = lf.data.len() as u64 * 4;
        let range = ctx.info().max_storage_buffer_range;
        if bytes > range {
            return Err(LfError::Invalid(format!(
                "the decoded views take {} and the device binds at most {} in one buffer",
                kit::budget::human(bytes),
                kit::budget::human(range)
            )));
        }
        let views = ctx.upload(&lf.data, "decoded views")?;
        GpuRenderer::from_device(ctx, crate::device::DeviceLightField { views, size: [lf.u, lf.v, lf.h, lf.w] })
    }

    /// Renders views already in device memory (from [`crate::device::decode_to_device`]).
    pub fn from_device(ctx: &Context, lf: crate::device::DeviceLightField) -> Result<GpuRenderer> {
        let pipeline = ctx.compute_pipeline_for::<RenderPush>("lightfield_render", crate::shaders::RENDER, 2, &[])?;
        Ok(GpuRenderer { ctx: ctx.clone(), pipeline, views: lf.views, size: lf.size })
    }

    /// The light field's size (U, V, H, W).
    pub fn size(&self) -> [usize; 4] {
        self.size
    }

    /// Records the rendering of `view` into `out` (at least width * height pixels).
    pub fn record(&self, rec: &mut Recorder, view: &View, order: PixelOrder, out: &Buffer<u32>) -> Result<()> {
        view.check(self.size)?;
        if out.len() < view.width as usize * view.height as usize {
            return Err(LfError::Invalid(format!("{} pixels for a {}x{} view", out.len(), view.width, view.height)));
        }
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
        rec.dispatch(&self.pipeline, &[self.views.binding(), out.binding()], &push, groups);
        Ok(())
    }

    /// Renders `view` and reads it back: `width * height` packed pixels.
    pub fn render(&self, view: &View, order: PixelOrder) -> Result<Vec<u32>> {
        let n = view.width as usize * view.height as usize;
        let out = self.ctx.buffer::<u32>(n, Location::Device, "rendered view")?;
        let read = self.ctx.buffer::<u32>(n, Location::Download, "rendered view readback")?;
        let mut rec = self.ctx.recorder()?;
        self.record(&mut rec, view, order, &out)?;
        rec.barrier();
        rec.copy(&out, &read);
        rec.submit()?.wait()?;
        Ok(read.mapped()?.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channels(p: u32) -> [i32; 4] {
        p.to_le_bytes().map(i32::from)
    }

    #[test]
    fn integer_viewpoints_are_the_views_themselves() {
        let lf = crate::synth::generate((3, 4), (13, 9), 2);
        for (u, v) in [(0, 0), (2, 3), (1, 2)] {
            for focus in [0.0, 2.5] {
                let view = View { position: [u as f32, v as f32], focus, ..View::centre([3, 4, 9, 13]) };
                let got = unpack_rgb8(&render_cpu(&lf, &view, PixelOrder::Rgba).unwrap(), PixelOrder::Rgba);
                let want: Vec<u8> = lf.view(u, v).iter().map(|&x| kit::image::to_u8(x)).collect();
                assert_eq!(got, want, "view ({u}, {v}) focus {focus}");
            }
        }
        let bad = View { position: [2.5, 0.0], ..View::centre([3, 4, 9, 13]) };
        assert!(render_cpu(&lf, &bad, PixelOrder::Rgba).is_err());
    }

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
}
