//! Refinement after EM: Adam on every parameter of every kernel ([`crate::params`]),
//! minimising the squared error of the rendered image (every view of a light field)
//! instead of EM's joint likelihood.
//!
//! The gate's S_YY plays no part in rendering; refinement keeps each kernel's conditional
//! colour covariance from EM, so the saved joint covariance stays positive definite.
//! On the GPU ([`crate::gpu::refine::GpuRefine`]) the whole loop stays on the device: the parameters, the
//! forward and backward passes, the loss and Adam; the host reads back a few floats per
//! batch of steps and the best parameters once. The host's f64 loop ([`refine_cpu`], with
//! [`Params::adam_step`]) is its twin.

#[cfg(test)]
mod tests;

use crate::data::{psnr_of_sse, Grid};
use crate::model::{Model, ModelError};
use crate::params::{Adam, Params, RefineOptions};

/// What refinement did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RefineReport {
    pub steps: usize,
    /// PSNR (all views) of the starting model, as the gradient backend renders it.
    pub start_psnr_db: f64,
    /// PSNR of the returned model (the best seen).
    pub psnr_db: f64,
    pub refine_ms: f64,
}

/// Refinement on the GPU, the loop included (see [`crate::gpu::refine::GpuRefine`]): the twin of
/// [`refine_cpu`] with exact culling and f32 parameters; `progress(step, psnr)` is called
/// for every step, a batch of steps at a time.
pub fn refine_gpu(
    ctx: &engine::Context,
    model: &Model,
    grid: &Grid,
    options: RefineOptions,
    progress: impl FnMut(usize, f64),
) -> crate::error::Result<(Model, RefineReport)> {
    refine_gpu_quantised(ctx, model, grid, options, None, progress)
}

/// [`refine_gpu`]; with `quantise`, quantisation-aware: every step's loss and gradient are
/// those of the parameters as a `.smc` file with these steps stores them, applied to the
/// unquantised ones (straight through), and the model returned is the one whose quantised
/// parameters rendered best (the twin of [`crate::smc_fit::refine_quantised_cpu`]).
pub fn refine_gpu_quantised(
    ctx: &engine::Context,
    model: &Model,
    grid: &Grid,
    options: RefineOptions,
    quantise: Option<&crate::codec::Steps>,
    progress: impl FnMut(usize, f64),
) -> crate::error::Result<(Model, RefineReport)> {
    let start = std::time::Instant::now();
    let params = Params::from_model(model)?;
    let mut gpu = crate::gpu::refine::GpuRefine::new(ctx, &params, grid, options.steps, quantise)?;
    let (best, sse) = gpu.run(&params, options, grid, progress)?;
    let report = RefineReport {
        steps: options.steps,
        start_psnr_db: psnr_of_sse(sse[0], grid.rgb.len()),
        psnr_db: psnr_of_sse(sse.iter().cloned().fold(f64::INFINITY, f64::min), grid.rgb.len()),
        refine_ms: start.elapsed().as_secs_f64() * 1e3,
    };
    Ok((best.to_model()?, report))
}

/// [`refine`] with the f64 twin (every kernel at every pixel, all cores).
pub fn refine_cpu(
    model: &Model,
    grid: &Grid,
    options: RefineOptions,
    progress: impl FnMut(usize, f64),
) -> Result<(Model, RefineReport), ModelError> {
    let eval = |params: &Params| {
        Ok::<_, ModelError>(crate::cpu::refine::loss_and_grad(params.layout(), &params.natural(), grid))
    };
    refine(model, grid, options, eval, progress)
}

/// Refines `model` against `grid` with Adam. `eval(params)` returns the squared error of
/// the rendered views (clamped to [0, 1]) and its natural gradient; `progress(step, psnr)`
/// is called after each step. Returns the best model seen (by the squared error `eval`
/// reports) and the report.
pub fn refine<E: From<ModelError>>(
    model: &Model,
    grid: &Grid,
    options: RefineOptions,
    mut eval: impl FnMut(&Params) -> Result<(f64, Vec<f64>), E>,
    mut progress: impl FnMut(usize, f64),
) -> Result<(Model, RefineReport), E> {
    let start = std::time::Instant::now();
    let values = grid.rgb.len();
    let mut params = Params::from_model(model)?;
    let mut adam = Adam::new(params.v.len());
    let mut best: Option<(f64, Params)> = None;
    let mut start_psnr = f64::NAN;
    for step in 0..=options.steps {
        let (sse, grad) = eval(&params)?;
        let psnr = psnr_of_sse(sse, values);
        if step == 0 {
            start_psnr = psnr;
        }
        if best.as_ref().is_none_or(|(b, _)| sse < *b) {
            best = Some((sse, params.clone()));
        }
        if step == options.steps {
            break;
        }
        params.adam_step(&mut adam, &grad, options.lr_at(step));
        progress(step, psnr);
    }
    let (sse, best) = best.expect("at least one evaluation");
    let report = RefineReport {
        steps: options.steps,
        start_psnr_db: start_psnr,
        psnr_db: psnr_of_sse(sse, values),
        refine_ms: start.elapsed().as_secs_f64() * 1e3,
    };
    Ok((best.to_model()?, report))
}
