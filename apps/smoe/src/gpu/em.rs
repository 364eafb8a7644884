//! The dense EM on the GPU: each iteration is three passes and no host round trip: factor
//! every kernel (`em_prepare`), the E-step log-sum-exp per sample (`em_estep`), and the
//! M-step, one workgroup per kernel reducing its responsibility-weighted moments
//! (`em_mstep`). The only readback per iteration is one partial log-likelihood per E-step
//! workgroup. These passes cost O(samples x K) per iteration: `smoe fit` uses them for light
//! fields, and [`culled`] (the same E- and M-step over tile-culled kernel lists) for images.
//! [`crate::cpu::em`] is the f64 twin.

pub mod culled;

use std::time::Instant;

use engine::{Buffer, Context, Location, Recorder};

use crate::data::Grid;
use crate::em::{model_from_raw, regularisation, FitReport};
use crate::model::{packed_len, Model};
use crate::shaders::kernels;

pub(crate) const GROUP: u32 = 256;
pub(crate) const CHUNK: u32 = 64;

/// The push constants of every EM pass (em.glsl); the frame fields are the culled
/// passes' (crate::gpu::em::culled).
#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Push {
    pub samples: u32,
    pub kernels: u32,
    pub per_group: u32,
    pub pad: u32,
    pub reg: [f32; 8],
    pub width: u32,
    pub height: u32,
    pub tiles_x: u32,
    pub capacity: u32,
    pub span: f32,
    pub margin: f32,
}

/// The regularisation of `grid` as the shaders' push constant.
pub(crate) fn reg_push(grid: &Grid) -> [f32; 8] {
    let mut reg = [0f32; 8];
    for (r, v) in reg.iter_mut().zip(regularisation(grid)) {
        *r = v as f32;
    }
    reg
}

/// Refuses `n` samples of `d` dimensions where the shaders index them in 32 bits.
fn check_samples(n: usize, d: usize) -> engine::Result<()> {
    if n as u64 * d as u64 > u32::MAX as u64 / 4 {
        return Err(engine::EngineError::InvalidInput(format!("{n} samples are too many for one fit")));
    }
    Ok(())
}

/// What a GPU fit's iterations fill in: the report, their GPU time and their start.
struct Iterations {
    report: FitReport,
    gpu_ms: f64,
    start: Instant,
}

impl Iterations {
    fn start(kernels: usize, samples: usize, iterations: usize) -> Iterations {
        Iterations { report: FitReport::new(kernels, samples, iterations), gpu_ms: 0.0, start: Instant::now() }
    }

    /// Submits an iteration's recording and waits for it; adds its GPU time, and records and
    /// returns the mean log-likelihood per sample from the E-step's per-workgroup `partials`.
    fn finish(&mut self, ctx: &Context, mut rec: Recorder, partials: &Buffer<f32>) -> engine::Result<f64> {
        rec.mark("em iteration");
        let passes = rec.submit()?.wait_profiled()?;
        self.gpu_ms += passes.iter().map(|p| p.ms).sum::<f64>();
        let loglik = ctx.download(partials)?.iter().map(|&v| v as f64).sum::<f64>() / self.report.samples as f64;
        self.report.loglik.push(loglik);
        Ok(loglik)
    }

    /// The model of `init`'s header with the raw records `raw` the iterations updated, and
    /// the report.
    fn end(mut self, ctx: &Context, init: &Model, raw: &Buffer<f32>) -> engine::Result<(Model, FitReport)> {
        self.report.em_ms = self.start.elapsed().as_secs_f64() * 1e3;
        self.report.gpu_ms = Some(self.gpu_ms);
        let params = ctx.download(raw)?;
        Ok((model_from_raw(init, &params), self.report))
    }
}

/// Runs `iterations` EM iterations on the GPU from the model `init` (fitted to `grid`),
/// calling `progress(iteration, loglik)` after each.
pub fn fit_gpu_from(
    ctx: &Context,
    grid: &Grid,
    init: Model,
    iterations: usize,
    mut progress: impl FnMut(usize, f64),
) -> engine::Result<(Model, FitReport)> {
    let k = init.pi.len();
    let d = init.dims();
    let n = grid.len();
    check_samples(n, d)?;
    let spec = [GROUP, d as u32, CHUNK];
    let prepare = ctx.kernel::<Push>(&kernels::EM_PREPARE, &spec)?;
    let estep = ctx.kernel::<Push>(&kernels::EM_ESTEP, &spec)?;
    let mstep = ctx.kernel::<Push>(&kernels::EM_MSTEP, &spec)?;
    let samples = ctx.upload(&grid.samples(), "smoe fit samples")?;
    let raw = ctx.upload(&init.raw_records(), "smoe fit kernels")?;
    let stride = d + packed_len(d) + 1;
    let prep = ctx.buffer::<f32>(k * stride, Location::Device, "smoe fit prepared")?;
    let lse = ctx.buffer::<f32>(n, Location::Device, "smoe fit lse")?;
    let sample_groups = (n as u32).div_ceil(GROUP);
    let partials = ctx.buffer::<f32>(sample_groups as usize, Location::Device, "smoe fit loglik partials")?;
    let push =
        Push { samples: n as u32, kernels: k as u32, per_group: GROUP, reg: reg_push(grid), ..Default::default() };
    let kernel_groups = (k as u32).div_ceil(GROUP);
    let mut fit = Iterations::start(k, n, iterations);
    for it in 0..iterations {
        let mut rec = ctx.recorder()?;
        rec.enable_profiling(4)?;
        rec.pass(&prepare).read(&raw).write(&prep).push(&push).dispatch_linear(kernel_groups)?;
        rec.pass(&estep)
            .read(&samples)
            .read(&prep)
            .write(&lse)
            .write(&partials)
            .push(&push)
            .dispatch_linear(sample_groups)?;
        rec.pass(&mstep)
            .read(&samples)
            .read(&prep)
            .read(&lse)
            .read_write(&raw)
            .push(&push)
            .dispatch_linear(k as u32)?;
        progress(it, fit.finish(ctx, rec, &partials)?);
    }
    fit.end(ctx, &init, &raw)
}

/// The bounds one GPU EM iteration (dense or culled) is held to against the f64 CPU step:
/// log-likelihood 1e-4 relative, pi 1e-4 relative, mu 1e-4, covariance 1e-3 relative; and
/// the result valid.
#[cfg(test)]
pub(crate) fn assert_step_matches(got: &Model, loglik: f64, want: &Model, want_ll: f64) {
    assert!((loglik - want_ll).abs() < 1e-4 * want_ll.abs().max(1.0), "{loglik} vs {want_ll}");
    for (g, w) in got.pi.iter().zip(&want.pi) {
        assert!((g - w).abs() <= 1e-4 * w.abs() + 1e-9, "pi {g} vs {w}");
    }
    for (g, w) in got.mu.iter().zip(&want.mu) {
        assert!((g - w).abs() <= 1e-4, "mu {g} vs {w}");
    }
    for (g, w) in got.cov.iter().zip(&want.cov) {
        assert!((g - w).abs() <= 1e-3 * w.abs() + 1e-7, "cov {g} vs {w}");
    }
    got.validate().unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::em::{em_step_cpu, fit_cpu};
    use crate::data::sample_lightfield;
    use crate::fit::{grid_init, Init};

    /// One GPU iteration against the f64 reference, for an image and a light field, at
    /// sample and kernel counts that are not multiples of the workgroup size.
    #[test]
    fn gpu_iteration_matches_cpu() {
        let ctx = engine::testing::context();
        for grid in [sample_lightfield(23, 17, 1, 1, 0.0), sample_lightfield(9, 7, 3, 2, 1.0)] {
            let k = 13;
            let init = grid_init(&grid, k);
            let (want, want_ll) = em_step_cpu(&init, &grid.samples(), &regularisation(&grid)).unwrap();
            let (got, report) = fit_gpu_from(ctx, &grid, init, 1, |_, _| {}).unwrap();
            assert_step_matches(&got, report.loglik[0], &want, want_ll);
        }
        engine::testing::assert_no_validation_messages();
    }

    /// The CPU twin (`fit --backend cpu`) against the GPU over several iterations from the
    /// same k-means start, on a random image at an awkward size (37x29 samples, 11 kernels:
    /// no multiple of any workgroup). Bounds: the log-likelihood trace agrees to a relative
    /// 1e-4, means to 1e-3 absolute (coordinates and colours are in [0, 1]), weights to a
    /// relative 1e-2. The gap is f32 against f64 rounding, amplified by each iteration.
    #[test]
    fn cpu_fit_matches_gpu_fit_on_a_random_image() {
        let ctx = engine::testing::context();
        let (w, h) = (37, 29);
        let mut rng = kit::fuzz::Rng::new(17);
        let rgb = (0..w * h * 3).map(|_| (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32).collect();
        let grid = Grid { extent: vec![w, h], rgb };
        let (k, iterations) = (11, 4);
        let init = Init::Kmeans.model(&grid, k, &mut || {});
        let (gpu, g) = fit_gpu_from(ctx, &grid, init.clone(), iterations, |_, _| {}).unwrap();
        let (cpu, c) = fit_cpu(&grid, init, iterations, |_, _| {}).unwrap();
        for (a, b) in g.loglik.iter().zip(&c.loglik) {
            assert!((a - b).abs() <= 1e-4 * b.abs().max(1.0), "loglik gpu {:?} cpu {:?}", g.loglik, c.loglik);
        }
        for (a, b) in gpu.mu.iter().zip(&cpu.mu) {
            assert!((a - b).abs() <= 1e-3, "mu gpu {a} cpu {b}");
        }
        for (a, b) in gpu.pi.iter().zip(&cpu.pi) {
            assert!((a - b).abs() <= 1e-2 * b, "pi gpu {a} cpu {b}");
        }
        cpu.validate().unwrap();
        engine::testing::assert_no_validation_messages();
    }
}
