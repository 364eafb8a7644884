//! The refinement loop on the GPU. The optimised parameters, Adam's moments and the best
//! parameters so far live on the device; per step (all recorded, [`STEPS_PER_SUBMIT`] steps
//! per command buffer):
//! - `refine_expand`: the raw records of the parameters (and ln pi's floor, from the
//!   maximum the previous step gathered); the renderer prepares them as for a loaded model;
//! - per view: the renderer's culling records, tile binning and blend (exact culling, robust
//!   mode) writing each pixel's colour and log-sum-exp, `refine_loss` (partial sums of the
//!   squared error), `refine_grad` (up to [`splits`] workgroups per kernel over its culling
//!   box: partial natural gradients) and `refine_grad_sum` (their sum, in order);
//! - `refine_loss` again: the step's loss and the best so far;
//! - `refine_adam`: keeps the parameters if they are the best so far, then the Adam step with
//!   the chain to the optimised parameters and the clamps.
//!
//! Every dispatch, the renderer's included, is a declared pass: the recorder places the
//! barriers. With a quantiser (`.smc` steps), `refine_expand` expands the values as the file
//! stores them (quantisation-aware refinement, straight through).
//!
//! The host reads back the losses and the tile lists' size once per submission (and grows
//! the lists for the next one where they overflowed: such tiles blend every kernel, which is
//! correct, only slower), and the best parameters once at the end. The culling's colour
//! bound is the widest the clamps allow, so it holds for every step's model.

use engine::{Buffer, Context, Kernel, Location, Recorder};

use crate::codec::Steps;
use crate::data::Grid;
use crate::gpu::{Frame, Mode, OutFormat, RenderSettings, Renderer};
use crate::params::{Adam, Params, RefineOptions, MAX_COLOUR};
use crate::shaders::kernels;

/// Steps recorded per command buffer: enough that a round trip per submission is noise
/// (tens of microseconds against a few milliseconds of work), few enough that the progress
/// bar moves.
pub const STEPS_PER_SUBMIT: usize = 16;
/// Pixels per workgroup of refine_loss.
const LOSS_GROUP: usize = 256;
/// Kernels per workgroup of refine_expand and refine_adam.
const KERNEL_GROUP: usize = 64;
/// The most partial gradient records refine_grad writes (their indices stay within 32 bits).
const MAX_PARTIALS: usize = 1 << 22;
/// Invocations per workgroup of refine_grad_sum.
const SUM_GROUP: usize = 256;

/// Floats per kernel of the GPU's gradient record (the natural layout, padded).
fn grad_stride(p: usize) -> usize {
    if p == 2 {
        16
    } else {
        32
    }
}

/// Push constants of refine_expand, refine_loss and refine_adam (shaders/smoe/refine.glsl).
#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    kernels: u32,
    step: u32,
    update: u32,
    floor_prior: u32,
    extent: [f32; 4],
    lr: f32,
    c1: f32,
    c2: f32,
    min_log_diag: f32,
    width: u32,
    height: u32,
    view: u32,
    count: u32,
    phase: u32,
    quantise: u32,
    qstep: [f32; 6],
}

/// The refinement's own kernels.
struct Stages {
    expand: Kernel<Push>,
    loss: Kernel<Push>,
    grad: Kernel<crate::gpu::render::Push>,
    grad_sum: Kernel<Push>,
    adam: Kernel<Push>,
}

/// The device state of one refinement.
pub struct GpuRefine {
    ctx: Context,
    renderer: Renderer,
    frame: Frame,
    stages: Stages,
    kernels: usize,
    /// Coordinate dimensions (2 or 4).
    p: usize,
    /// (u, v) of every view, in the order of the grid's views.
    views: Vec<[f32; 2]>,
    target: Buffer<f32>,
    v: Buffer<f32>,
    m1: Buffer<f32>,
    m2: Buffer<f32>,
    keep: Buffer<f32>,
    resid: Buffer<f32>,
    grad: Buffer<f32>,
    /// refine_grad's partial gradients: `splits` records per kernel.
    partial_grad: Buffer<f32>,
    splits: usize,
    /// Per step: the largest ln pi (float keys; slot 0 from the host).
    thmax: Buffer<u32>,
    /// Per step: the loss.
    track: Buffer<f32>,
    /// best[s]: the smallest loss of steps before s (best[0] = infinity).
    best: Buffer<f32>,
    partials: Buffer<f32>,
    base: Push,
}

impl GpuRefine {
    /// Uploads `params` fitted to `grid` for up to `steps` steps (and the final evaluation);
    /// with `quantise`, every step's forward and backward passes see the parameters as a
    /// `.smc` file with these steps stores them.
    pub fn new(
        ctx: &Context,
        params: &Params,
        grid: &Grid,
        steps: usize,
        quantise: Option<&Steps>,
    ) -> crate::error::Result<GpuRefine> {
        let (p, kernels) = (params.layout.p, params.len());
        let mut renderer = Renderer::new(ctx, &params.to_model()?, Mode::Robust)?;
        // Adam keeps every mu_Y within [-MAX_COLOUR, MAX_COLOUR]: the widest colour span.
        renderer.set_span((2.0 * MAX_COLOUR + 1.0) as f32);
        let settings = RenderSettings {
            format: OutFormat::RgbLseF32,
            ..RenderSettings::new(grid.width() as u32, grid.height() as u32)
        };
        let frame = renderer.frame(settings, 0)?;
        let spec = [0, p as u32];
        let stages = Stages {
            expand: ctx.kernel(&kernels::REFINE_EXPAND, &spec)?,
            loss: ctx.kernel(&kernels::REFINE_LOSS, &spec)?,
            // The backward pass reads the renderer's frame constants.
            grad: ctx.kernel(&kernels::REFINE_GRAD, &[64, p as u32, 1, splits(kernels) as u32])?,
            grad_sum: ctx
                .kernel(&kernels::REFINE_GRAD_SUM, &[SUM_GROUP as u32, p as u32, 0, splits(kernels) as u32])?,
            adam: ctx.kernel(&kernels::REFINE_ADAM, &spec)?,
        };
        let model = &params.template;
        let (nu, nv) = if p == 4 { (grid.extent[2], grid.extent[3]) } else { (1, 1) };
        let views: Vec<[f32; 2]> = (0..nv)
            .flat_map(|b| (0..nu).map(move |a| [a as f64, b as f64]))
            .map(|ab| crate::cpu::render::view_coords(model, ab).map(|c| c as f32))
            .collect();
        let f32s = |x: &[f64]| x.iter().map(|&v| v as f32).collect::<Vec<f32>>();
        let n = params.v.len();
        let pixels = grid.width() * grid.height();
        let loss_groups = pixels.div_ceil(LOSS_GROUP);
        let mut extent = [1.0f32; 4];
        extent.iter_mut().zip(&params.extent).for_each(|(e, &x)| *e = x as f32);
        let mut thmax = vec![0u32; steps + 2];
        thmax[0] = float_key(params.max_theta() as f32);
        let mut best = vec![0.0f32; steps + 2];
        best[0] = f32::INFINITY;
        let zeros = |len: usize, what: &str| -> engine::Result<Buffer<f32>> {
            let b = ctx.buffer(len, Location::Device, what)?;
            ctx.run(|rec| {
                rec.fill(&b, 0);
                Ok(())
            })?;
            Ok(b)
        };
        Ok(GpuRefine {
            ctx: ctx.clone(),
            stages,
            kernels,
            p,
            target: ctx.upload(&grid.rgb, "smoe refine target")?,
            v: ctx.upload(&f32s(&params.v), "smoe refine parameters")?,
            m1: zeros(n, "smoe refine first moments")?,
            m2: zeros(n, "smoe refine second moments")?,
            keep: zeros(n, "smoe refine best parameters")?,
            resid: ctx.upload(&f32s(&params.resid), "smoe refine colour covariances")?,
            grad: zeros(kernels * grad_stride(p), "smoe refine gradient")?,
            partial_grad: zeros(kernels * splits(kernels) * grad_stride(p), "smoe refine partial gradients")?,
            splits: splits(kernels),
            thmax: ctx.upload(&thmax, "smoe refine prior maxima")?,
            track: zeros(steps + 1, "smoe refine losses")?,
            best: ctx.upload(&best, "smoe refine best losses")?,
            partials: zeros(loss_groups * views.len(), "smoe refine partial losses")?,
            base: Push {
                kernels: kernels as u32,
                extent,
                min_log_diag: params.min_log_diag() as f32,
                width: grid.width() as u32,
                height: grid.height() as u32,
                count: loss_groups as u32,
                quantise: quantise.is_some() as u32,
                qstep: quantise.map_or([0.0; 6], |q| q.0),
                ..Push::default()
            },
            renderer,
            frame,
            views,
        })
    }

    /// Runs `options.steps` steps and the final evaluation; returns the best parameters (a
    /// copy of `start` with them) and every step's squared error.
    pub fn run(
        &mut self,
        start: &Params,
        options: RefineOptions,
        grid: &Grid,
        mut progress: impl FnMut(usize, f64),
    ) -> crate::error::Result<(Params, Vec<f64>)> {
        self.size_lists()?;
        let mut done = 0;
        while done <= options.steps {
            let end = (done + STEPS_PER_SUBMIT).min(options.steps + 1);
            let mut rec = self.ctx.recorder()?;
            for step in done..end {
                self.record_step(&mut rec, step, (step < options.steps).then(|| options.lr_at(step)))?;
            }
            rec.submit()?.wait()?;
            let losses = self.ctx.download_range(&self.track, done, end - done)?;
            for (i, &sse) in losses.iter().enumerate() {
                if done + i < options.steps {
                    progress(done + i, crate::data::psnr_of_sse(sse as f64, grid.rgb.len()));
                }
            }
            let entries = self.renderer.list_entries(&self.frame)?;
            self.renderer.fit_capacity(&mut self.frame, entries)?;
            done = end;
        }
        let sse = self.ctx.download(&self.track)?.iter().map(|&v| v as f64).collect();
        let mut best = start.clone();
        best.v = self.ctx.download(&self.keep)?.iter().map(|&v| v as f64).collect();
        Ok((best, sse))
    }

    /// GPU time per pass of `steps` steps (from step 0, with `options`' learning rates),
    /// recorded in one command buffer with a timestamp after each pass: the expansion, the
    /// renderer's passes (its culling records, bound, binning and blend), the loss, the
    /// backward pass and Adam. Times are totals over the steps, by pass name.
    pub fn profile(&mut self, options: RefineOptions, steps: usize) -> crate::error::Result<Vec<engine::PassTime>> {
        self.size_lists()?;
        let mut rec = self.ctx.recorder()?;
        rec.enable_profiling((steps * (3 * self.views.len() + 3)) as u32)?;
        for step in 0..steps {
            self.record_step(&mut rec, step, Some(options.lr_at(step)))?;
        }
        Ok(engine::profile::total_by_name(&rec.submit()?.wait_profiled()?))
    }

    /// Sizes the tile lists for the starting parameters, with a quarter more for kernels
    /// that grow (a list that overflows later grows after that submission), so the first
    /// steps do not blend every kernel in every tile.
    fn size_lists(&mut self) -> crate::error::Result<()> {
        self.ctx.run(|rec| self.record_expand(rec, 0))?;
        let mut entries = 0;
        for view in 0..self.views.len() {
            self.frame.settings.uv = self.views[view];
            self.ctx.run(|rec| self.renderer.record_bins(rec, &self.frame))?;
            entries = entries.max(self.renderer.list_entries(&self.frame)?);
        }
        self.renderer.fit_capacity(&mut self.frame, entries + entries / 4)?;
        Ok(())
    }

    /// Records refine_expand for step `step` (the prior floor from step 1 on) and the
    /// renderer's preparation of its records.
    fn record_expand(&self, rec: &mut Recorder, step: usize) -> engine::Result<()> {
        let push = Push { step: step as u32, floor_prior: (step > 0) as u32, ..self.base };
        rec.pass(&self.stages.expand)
            .read_write(&self.v)
            .read(&self.resid)
            .read(&self.thmax)
            .write(self.renderer.raw())
            .push(&push)
            .dispatch_linear(groups(self.kernels, KERNEL_GROUP))?;
        self.renderer.record_prepare(rec);
        Ok(())
    }

    /// Records step `step`: the forward and backward passes of the current parameters, their
    /// loss, and (with a learning rate) the Adam step.
    /// Each pass ends with a profiling mark (a no-op unless the recorder profiles).
    fn record_step(&mut self, rec: &mut Recorder, step: usize, lr: Option<f64>) -> engine::Result<()> {
        self.record_expand(rec, step)?;
        rec.mark("expand + prepare");
        for view in 0..self.views.len() {
            self.record_view(rec, view)?;
        }
        let push = Push { step: step as u32, phase: 1, count: self.partials.len() as u32, ..self.base };
        self.record_loss(rec, &push, [1, 1, 1])?;
        rec.mark("loss");
        let t = step as i32 + 1;
        let (c1, c2) = Adam::corrections(t);
        let push = Push {
            step: step as u32,
            update: lr.is_some() as u32,
            lr: lr.unwrap_or(0.0) as f32,
            c1: c1 as f32,
            c2: c2 as f32,
            ..self.base
        };
        self.record_adam(rec, &push)?;
        rec.mark("adam");
        Ok(())
    }

    /// Records refine_loss: phase 0 a view's partial sums, phase 1 the step's loss and the
    /// best so far.
    fn record_loss(&self, rec: &mut Recorder, push: &Push, groups: [u32; 3]) -> engine::Result<()> {
        rec.pass(&self.stages.loss)
            .read(&self.frame.out)
            .read(&self.target)
            .read_write(&self.partials)
            .read_write(&self.track)
            .read_write(&self.best)
            .push(push)
            .dispatch(groups)
    }

    /// Records the forward pass of view `view`, its loss's partial sums and its gradient
    /// (added to the earlier views').
    fn record_view(&mut self, rec: &mut Recorder, view: usize) -> engine::Result<()> {
        self.frame.settings.uv = self.views[view];
        self.renderer.record(rec, &self.frame)?;
        let push = Push { view: view as u32, ..self.base };
        self.record_loss(rec, &push, engine::linear_grid(self.base.count))?;
        rec.mark("loss");
        let mut push = self.renderer.push(&self.frame);
        push.phase = view as u32;
        rec.pass(&self.stages.grad)
            .read(self.renderer.prepared())
            .read(&self.frame.cull)
            .read(&self.frame.floor)
            .read(&self.frame.out)
            .read(&self.target)
            .write(&self.partial_grad)
            .push(&push)
            .dispatch_linear((self.kernels * self.splits) as u32)?;
        let sum = Push { view: view as u32, ..self.base };
        rec.pass(&self.stages.grad_sum)
            .read(&self.partial_grad)
            .read_write(&self.grad)
            .push(&sum)
            .dispatch_linear(groups(self.kernels * grad_stride(self.p), SUM_GROUP))?;
        rec.mark("backward");
        Ok(())
    }

    /// Per kernel, the pixels the last step's backward pass walked (its support boxes' areas,
    /// summed over the views), and the pixel-kernel pairs the last view's blend evaluated
    /// (tile-list entries times the tile's pixels): the two passes' work.
    pub fn work(&self) -> crate::error::Result<(Vec<f32>, usize)> {
        let p = self.p;
        let slot = p + p * (p + 1) / 2 + 4 + 3 * p;
        let stride = grad_stride(p);
        let boxes = self.ctx.download(&self.grad)?.chunks_exact(stride).map(|g| g[slot]).collect();
        let tile = self.frame.settings.tile as usize;
        Ok((boxes, self.renderer.list_entries(&self.frame)? * tile * tile))
    }

    fn record_adam(&self, rec: &mut Recorder, push: &Push) -> engine::Result<()> {
        rec.pass(&self.stages.adam)
            .read_write(&self.v)
            .read_write(&self.m1)
            .read_write(&self.m2)
            .read(&self.grad)
            .write(&self.keep)
            .read(&self.track)
            .read(&self.best)
            .read_write(&self.thmax)
            .push(push)
            .dispatch_linear(groups(self.kernels, KERNEL_GROUP))
    }
}

/// Workgroups of refine_grad per kernel: the most runs a wide kernel's support box is cut
/// into (8; fewer for models so large that the partial records would pass
/// [`MAX_PARTIALS`]).
pub fn splits(kernels: usize) -> usize {
    (MAX_PARTIALS / kernels.max(1)).clamp(1, 8)
}

fn groups(n: usize, per: usize) -> u32 {
    n.div_ceil(per).max(1) as u32
}

/// Order-preserving map of floats to uints (bound.glsl's float_key).
fn float_key(f: f32) -> u32 {
    let b = f.to_bits();
    if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{sample_lightfield, Grid};
    use crate::fit::Init;
    use crate::gpu::em::fit_gpu_from;
    use crate::params::Layout;

    impl GpuRefine {
        /// The squared error and natural gradient of the parameters on the device (one
        /// evaluation, no step).
        fn gradient(&mut self, layout: Layout) -> crate::error::Result<(f64, Vec<f64>)> {
            let mut rec = self.ctx.recorder()?;
            self.record_step(&mut rec, 0, None)?;
            rec.submit()?.wait()?;
            let stride = layout.stride();
            let raw = self.ctx.download(&self.grad)?;
            let grad = raw.chunks_exact(grad_stride(layout.p)).flat_map(|g| g[..stride].iter().map(|&v| v as f64));
            Ok((self.ctx.download_range(&self.track, 0, 1)?[0] as f64, grad.collect()))
        }

        /// Adam step `step` (from 0) with the natural gradient `grad`, and the prior floor
        /// refine_expand then applies; returns the parameters.
        fn adam(&mut self, layout: Layout, step: usize, grad: &[f64], lr: f64) -> crate::error::Result<Vec<f64>> {
            let stride = layout.stride();
            let mut padded = vec![0.0f32; self.kernels * grad_stride(layout.p)];
            for (dst, src) in padded.chunks_exact_mut(grad_stride(layout.p)).zip(grad.chunks_exact(stride)) {
                dst[..stride].iter_mut().zip(src).for_each(|(d, &s)| *d = s as f32);
            }
            self.ctx.write(&self.grad, 0, &padded)?;
            let (c1, c2) = Adam::corrections(step as i32 + 1);
            let push = Push { step: step as u32, update: 1, lr: lr as f32, c1: c1 as f32, c2: c2 as f32, ..self.base };
            let mut rec = self.ctx.recorder()?;
            self.record_adam(&mut rec, &push)?;
            self.record_expand(&mut rec, step + 1)?;
            rec.submit()?.wait()?;
            Ok(self.ctx.download(&self.v)?.iter().map(|&v| v as f64).collect())
        }
    }

    /// The GPU's gradient against the f64 twin's, on random-coloured images at awkward sizes
    /// (37x29, 11 kernels; 101x83, 190 kernels) and on a light field (9x7 pixels, 3x2 views,
    /// 7 kernels).
    /// Bound: every component within 2e-4 of the largest gradient of its kind (f32 against
    /// f64, and pixels beyond a kernel's culling box, where its share is below 1/65536; 1.2e-5
    /// is the worst seen on lavapipe).
    #[test]
    fn gpu_gradient_matches_cpu() {
        check_gradients(None);
    }

    /// The same with the quantiser in the loop (`.smc` steps at scale 1): the GPU's
    /// gradient at the quantised parameters against the f64 twin's at
    /// `codec::quantised` of them (the parameters first rounded to the f32 the GPU holds).
    #[test]
    fn gpu_quantised_gradient_matches_cpu() {
        check_gradients(Some(Steps::scaled(1.0)));
    }

    fn check_gradients(quantise: Option<Steps>) {
        let ctx = engine::testing::context();
        let mut rng = kit::fuzz::Rng::new(5);
        let mut noisy = |w: usize, h: usize| {
            let mut g = sample_lightfield(w, h, 1, 1, 0.0);
            g.rgb
                .iter_mut()
                .for_each(|v| *v = (*v + 0.1 * ((rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32)).min(1.0));
            g
        };
        // The third case has many kernels over several tiles (7x6 at 16 pixels), and support
        // boxes of more than two of refine_grad's runs.
        let cases: [(Grid, usize); 3] =
            [(noisy(37, 29), 11), (sample_lightfield(9, 7, 3, 2, 1.0), 7), (noisy(101, 83), 190)];
        for (grid, k) in cases {
            let init = Init::Kmeans.model(&grid, k, &mut || {});
            let (model, _) = fit_gpu_from(ctx, &grid, init, 4, |_, _| {}).unwrap();
            let mut params = Params::from_model(&model).unwrap();
            params.v.iter_mut().for_each(|v| *v = *v as f32 as f64);
            let mut gpu = GpuRefine::new(ctx, &params, &grid, 1, quantise.as_ref()).unwrap();
            let layout = params.layout();
            let (sse, got) = gpu.gradient(layout).unwrap();
            let evaluated = quantise.map_or_else(|| params.clone(), |q| crate::codec::quantised(&params, &q));
            let (want_sse, want) = crate::cpu::refine::loss_and_grad(layout, &evaluated.natural(), &grid);
            let worst = worst_by_kind(&got, &want, layout.stride());
            eprintln!("p = {}: sse gpu {sse:.6} cpu {want_sse:.6}, worst gradient error {worst:.2e}", layout.p);
            assert!((sse - want_sse).abs() <= 1e-4 * want_sse, "{sse} vs {want_sse}");
            assert!(worst < 2e-4, "{worst}");
            if k == 190 {
                // Some boxes are cut over several workgroups (refine_grad's MIN_SPLIT pixels).
                let (boxes, _) = gpu.work().unwrap();
                assert!(
                    boxes.iter().any(|&b| b > 2048.0),
                    "no box cut: {:?}",
                    boxes.iter().fold(0f32, |a, &b| a.max(b))
                );
            }
        }
        engine::testing::assert_no_validation_messages();
    }

    /// The worst error of `got` against `want` relative to the largest |want| of the same
    /// kind (index modulo `stride`).
    fn worst_by_kind(got: &[f64], want: &[f64], stride: usize) -> f64 {
        let mut worst = 0.0f64;
        for s in 0..stride {
            let scale = want.iter().skip(s).step_by(stride).fold(0.0f64, |a, v| a.max(v.abs())).max(1e-9);
            for (g, w) in got.iter().skip(s).step_by(stride).zip(want.iter().skip(s).step_by(stride)) {
                worst = worst.max((g - w).abs() / scale);
            }
        }
        worst
    }

    /// One and then six more GPU Adam steps (refine_adam with refine_expand's prior floor)
    /// against the f64 twin `Params::adam_step`, from random parameters (every value moved,
    /// some priors pushed below the floor, some values past their clamps) with random
    /// non-zero gradients, for an image (13 kernels, 23x17) and a light field (7 kernels,
    /// 9x7 x 3x2). Bound: every value within 2e-5 of max(|value|, 1) (f32 against f64; Adam's
    /// first steps are lr * scale * sign(g), so f32 rounding stays at that scale).
    #[test]
    fn gpu_adam_matches_the_f64_twin() {
        let ctx = engine::testing::context();
        let mut rng = kit::fuzz::Rng::new(11);
        let mut uniform = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
        for (grid, k) in [(sample_lightfield(23, 17, 1, 1, 0.0), 13), (sample_lightfield(9, 7, 3, 2, 1.0), 7)] {
            let init = Init::Kmeans.model(&grid, k, &mut || {});
            let (model, _) = fit_gpu_from(ctx, &grid, init, 2, |_, _| {}).unwrap();
            let mut params = Params::from_model(&model).unwrap();
            let stride = params.layout().stride();
            let theta = params.offsets().2;
            for (i, v) in params.v.iter_mut().enumerate() {
                *v += 0.3 * uniform() * v.abs().max(0.1);
                if i % stride == theta && i / stride % 5 == 1 {
                    *v -= 70.0;
                }
                if i % stride == stride - 1 && i / stride % 4 == 2 {
                    *v = 8.5;
                }
                *v = *v as f32 as f64;
            }
            let mut gpu = GpuRefine::new(ctx, &params, &grid, 8, None).unwrap();
            let mut adam = Adam::new(params.v.len());
            for step in 0..7 {
                let grad: Vec<f64> =
                    (0..params.v.len()).map(|_| (uniform() * 1e3).round() / 1e3 + 1e-3 * uniform().signum()).collect();
                let grad: Vec<f64> = grad.iter().map(|&g| g as f32 as f64).collect();
                let lr = RefineOptions { steps: 7, ..RefineOptions::default() }.lr_at(step);
                let got = gpu.adam(params.layout(), step, &grad, lr).unwrap();
                params.adam_step(&mut adam, &grad, lr);
                let worst =
                    got.iter().zip(&params.v).map(|(g, w)| (g - w).abs() / w.abs().max(1.0)).fold(0.0, f64::max);
                eprintln!("p = {}, step {step}: worst relative difference {worst:.2e}", params.layout().p);
                assert!(worst < 2e-5, "step {step}: {worst:e}");
            }
        }
        engine::testing::assert_no_validation_messages();
    }
}
