//! The refinement's gradient on the GPU: per view, the renderer's forward pass (exact tile
//! culling, robust mode) writes each pixel's colour and log-sum-exp, then `refine_grad`
//! (one workgroup per kernel, over the pixels of its culling box) writes the gradient of
//! the squared error with respect to the kernel's prepared parameters. The host reads back
//! the gradient (K x 16 floats for images) and the rendered pixels for the error.

use engine::{Buffer, ComputePipeline, Context, Location, PipelineDesc};

use super::{Layout, Params};
use crate::data::Grid;
use crate::gpu::{Frame, Mode, OutFormat, RenderSettings, Renderer};
use crate::model::Model;
use crate::shaders;

/// Floats per kernel of the GPU's gradient record (the natural layout, padded).
fn grad_stride(p: usize) -> usize {
    if p == 2 {
        16
    } else {
        32
    }
}

/// The GPU's forward and backward passes for one grid, reused across steps.
pub struct GpuGrad {
    ctx: Context,
    renderer: Renderer,
    frame: Frame,
    pipe: ComputePipeline,
    target: Buffer<f32>,
    grad: Buffer<f32>,
    layout: Layout,
}

impl GpuGrad {
    /// Sets up the passes for models shaped like `model` fitted to `grid`.
    pub fn new(ctx: &Context, model: &Model, grid: &Grid) -> engine::Result<GpuGrad> {
        let p = model.coord_dims;
        let mut renderer = Renderer::new(ctx, model, Mode::Robust)?;
        let settings = RenderSettings {
            format: OutFormat::RgbLseF32,
            ..RenderSettings::new(grid.width() as u32, grid.height() as u32)
        };
        let frame = renderer.frame(settings, 0)?;
        let pipe = ctx.compute_pipeline(&PipelineDesc {
            name: "refine_grad",
            spirv: shaders::REFINE_GRAD,
            bindings: 6,
            push_bytes: std::mem::size_of::<crate::gpu::Push>() as u32,
            spec: &[64, p as u32, 1],
        })?;
        Ok(GpuGrad {
            ctx: ctx.clone(),
            renderer,
            frame,
            pipe,
            target: ctx.upload(&grid.rgb, "smoe refine target")?,
            grad: ctx.buffer(model.len() * grad_stride(p), Location::Device, "smoe refine gradient")?,
            layout: Layout { p },
        })
    }

    /// The squared error of `model` over every view of `grid` (clamped to [0, 1]) and its
    /// gradient with respect to the natural parameters (see [`Layout`]).
    pub fn eval_model(&mut self, model: &Model, grid: &Grid) -> engine::Result<(f64, Vec<f64>)> {
        self.renderer.update(model)?;
        let (nu, nv) = if self.layout.p == 4 { (grid.extent[2], grid.extent[3]) } else { (1, 1) };
        let mut sse = 0.0;
        for b in 0..nv {
            for a in 0..nu {
                let view = b * nu + a;
                let uv = crate::reference::view_coords(model, [a as f64, b as f64]);
                self.frame.settings.uv = [uv[0] as f32, uv[1] as f32];
                let mut rec = self.ctx.recorder()?;
                self.renderer.record(&mut rec, &self.frame);
                rec.barrier();
                let mut push = self.renderer.push(&self.frame);
                push.phase = view as u32;
                let bindings = [
                    self.renderer.prepared().binding(),
                    self.frame.cull.binding(),
                    self.frame.params.binding(),
                    self.frame.out.binding(),
                    self.target.binding(),
                    self.grad.binding(),
                ];
                rec.dispatch_linear(&self.pipe, &bindings, &push, model.len() as u32);
                rec.submit()?.wait()?;
                // A list that overflowed rendered its tile with every kernel (correct, slower):
                // grow the lists for the next pass.
                let entries = self.renderer.list_entries(&self.frame)?;
                self.renderer.fit_capacity(&mut self.frame, entries)?;
                let state: Vec<f32> = bytemuck::cast_slice(&self.ctx.download(&self.frame.out)?).to_vec();
                let want = grid.view(a, b);
                for (px, t) in state.chunks_exact(4).zip(want.chunks_exact(3)) {
                    for ch in 0..3 {
                        let e = px[ch].clamp(0.0, 1.0) as f64 - t[ch] as f64;
                        sse += e * e;
                    }
                }
            }
        }
        let raw = self.ctx.download(&self.grad)?;
        let (stride, gs) = (self.layout.stride(), grad_stride(self.layout.p));
        let grad = raw.chunks_exact(gs).flat_map(|g| g[..stride].iter().map(|&v| v as f64)).collect();
        Ok((sse, grad))
    }

    /// [`GpuGrad::eval_model`] of the model `params` describe.
    pub fn eval(&mut self, params: &Params, grid: &Grid) -> anyhow::Result<(f64, Vec<f64>)> {
        Ok(self.eval_model(&params.to_model()?, grid)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{sample_lightfield, Grid};
    use crate::fit::{fit_gpu_from, Init};

    /// The GPU's gradient against the f64 twin's, on a random-coloured image at an awkward
    /// size (37x29, 11 kernels) and on a light field (9x7 pixels, 3x2 views, 7 kernels).
    /// Bound: every component within 2e-4 of the largest gradient of its kind (f32 against
    /// f64, and pixels beyond a kernel's culling box, where its share is below 1/65536; 8e-6 is the worst seen on lavapipe).
    #[test]
    fn gpu_gradient_matches_cpu() {
        let ctx = engine::testing::context();
        let mut rng = kit::fuzz::Rng::new(5);
        let noisy = {
            let mut g = sample_lightfield(37, 29, 1, 1, 0.0);
            g.rgb
                .iter_mut()
                .for_each(|v| *v = (*v + 0.1 * ((rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32)).min(1.0));
            g
        };
        let cases: [(Grid, usize); 2] = [(noisy, 11), (sample_lightfield(9, 7, 3, 2, 1.0), 7)];
        for (grid, k) in cases {
            let init = Init::Kmeans.model(&grid, k, &mut || {});
            let (model, _) = fit_gpu_from(ctx, &grid, init, 4, |_, _| {}).unwrap();
            let mut gpu = GpuGrad::new(ctx, &model, &grid).unwrap();
            let (sse, got) = gpu.eval_model(&model, &grid).unwrap();
            let layout = Layout { p: model.coord_dims };
            let (want_sse, want) =
                crate::refine::cpu::loss_and_grad(layout, &Params::from_model(&model).unwrap().natural(), &grid);
            let stride = layout.stride();
            let mut worst = 0.0f64;
            for s in 0..stride {
                let scale = want.iter().skip(s).step_by(stride).fold(0.0f64, |a, v| a.max(v.abs())).max(1e-9);
                for (g, w) in got.iter().skip(s).step_by(stride).zip(want.iter().skip(s).step_by(stride)) {
                    worst = worst.max((g - w).abs() / scale);
                }
            }
            eprintln!("p = {}: sse gpu {sse:.6} cpu {want_sse:.6}, worst gradient error {worst:.2e}", layout.p);
            assert!((sse - want_sse).abs() <= 1e-4 * want_sse, "{sse} vs {want_sse}");
            assert!(worst < 2e-4, "{worst}");
        }
        engine::testing::assert_no_validation_messages();
    }
}
