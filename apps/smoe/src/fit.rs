//! The EM fitter: a full-covariance Gaussian mixture over the joint samples (x, y, [u, v],
//! r, g, b), started from k-means (default) or a regular grid of kernels, with covariance
//! regularisation. The iterations are [`crate::gpu::em`] (dense; its `culled` variant for
//! images) and their f64 twin [`crate::cpu::em`]; this module holds what both share: the
//! start, the regularisation, the report, the PSNR of a fitted model, and the whole sequence
//! at one K ([`fit_kernels`]: start, EM, refinement, PSNR) that `smoe fit` and the Python
//! package run.

use engine::Context;

use crate::cpu::em::fit_cpu;
use crate::cpu::kmeans::kmeans_init;
use crate::data::{psnr, Grid};
use crate::em::{regularisation, FitReport};
use crate::error::Result;
use crate::gpu::em::culled::fit_gpu_culled;
use crate::gpu::em::fit_gpu_from;
use crate::gpu::kmeans::kmeans_init_gpu;
use crate::gpu::{Mode, RenderSettings, Renderer};
use crate::model::{packed_len, ColorSpace, Model};
use crate::params::RefineOptions;
use crate::refine::{refine_cpu, refine_gpu};

/// `k` kernels on a regular grid over the coordinate space (rows of near-equal length, as
/// many rows as keep cells near square), each with the colour found at its centre (centre
/// view for light fields), a coordinate spread of half a cell, and for light fields a view
/// spread covering every view.
pub fn grid_init(grid: &Grid, k: usize) -> Model {
    let p = grid.coord_dims();
    let (w, h) = (grid.width() as f64, grid.height() as f64);
    let rows = ((k as f64 * h / w).sqrt().round() as usize).clamp(1, k);
    let centre_view = if p == 4 { grid.view(grid.extent[2] / 2, grid.extent[3] / 2) } else { grid.view(0, 0) };
    let d = p + 3;
    let mut m = Model {
        coord_dims: p,
        color_dims: 3,
        color_space: ColorSpace::Rgb,
        extent: grid.extent.clone(),
        pi: vec![1.0 / k as f64; k],
        mu: Vec::with_capacity(k * d),
        cov: Vec::with_capacity(k * packed_len(d)),
    };
    for r in 0..rows {
        let in_row = k / rows + usize::from(r < k % rows);
        for c in 0..in_row {
            let (x, y) = ((c as f64 + 0.5) / in_row as f64, (r as f64 + 0.5) / rows as f64);
            let (px, py) = (((x * w) as usize).min(grid.width() - 1), ((y * h) as usize).min(grid.height() - 1));
            let i = (py * grid.width() + px) * 3;
            m.mu.extend([x, y]);
            if p == 4 {
                m.mu.extend([0.5, 0.5]);
            }
            m.mu.extend(centre_view[i..i + 3].iter().map(|&v| v as f64));
            let mut var = vec![(0.5 / in_row as f64).powi(2), (0.5 / rows as f64).powi(2)];
            if p == 4 {
                var.extend([1.0 / 12.0, 1.0 / 12.0]);
            }
            var.extend([0.01; 3]);
            for (a, &va) in var.iter().enumerate() {
                m.cov.extend((0..=a).map(|b| if a == b { va } else { 0.0 }));
            }
        }
    }
    m
}

/// How the fitter places its starting kernels.
#[derive(clap::ValueEnum, serde::Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Init {
    /// k-means++ seeding and Lloyd iterations on the joint samples (fixed seed; on the GPU unless --backend cpu)
    #[default]
    Kmeans,
    /// Kernels on a regular grid over the coordinates
    Grid,
}

/// Seed of the k-means++ seeding, fixed so that fits are reproducible.
const KMEANS_SEED: u64 = 0x5eed_50e5;

impl Init {
    /// The starting model of `k` kernels for `grid`; `tick` is called [`Init::steps`] times
    /// as the work advances (for a progress bar).
    pub fn model(self, grid: &Grid, k: usize, tick: &mut dyn FnMut()) -> Model {
        match self {
            Init::Kmeans => kmeans_init(grid, k, &regularisation(grid), KMEANS_SEED, tick),
            Init::Grid => {
                let m = grid_init(grid, k);
                tick();
                m
            }
        }
    }

    /// [`Init::model`] with the k-means start on `ctx`'s GPU when there is one (the CPU twin
    /// otherwise); ticks [`Init::steps`] times.
    pub fn model_on(
        self,
        ctx: Option<&Context>,
        grid: &Grid,
        k: usize,
        tick: &mut dyn FnMut(),
    ) -> engine::Result<Model> {
        match (self, ctx) {
            (Init::Kmeans, Some(ctx)) => kmeans_init_gpu(ctx, grid, k, &regularisation(grid), KMEANS_SEED, tick),
            _ => Ok(self.model(grid, k, tick)),
        }
    }

    /// How many times [`Init::model`] ticks.
    pub fn steps(self, k: usize) -> u64 {
        match self {
            Init::Kmeans => crate::cpu::kmeans::steps(k),
            Init::Grid => 1,
        }
    }
}

/// Fits `k` kernels to `grid` from the default initialisation with `iterations` EM
/// iterations on the GPU, calling `progress(iteration, loglik)` after each.
pub fn fit_gpu(
    ctx: &Context,
    grid: &Grid,
    k: usize,
    iterations: usize,
    progress: impl FnMut(usize, f64),
) -> engine::Result<(Model, FitReport)> {
    fit_gpu_from(ctx, grid, Init::default().model_on(Some(ctx), grid, k, &mut || {})?, iterations, progress)
}

/// How each fit runs.
#[derive(Clone, Copy, Debug)]
pub struct FitSettings {
    pub iterations: usize,
    pub init: Init,
    pub refine: RefineOptions,
}

/// Where a fit is, for a progress display.
#[derive(Clone, Copy, Debug)]
pub enum FitProgress {
    /// The start: `done` of [`Init::steps`] steps.
    Start { kernels: usize, done: u64, total: u64 },
    /// EM iteration `step` (from 1) of `total`, its mean log-likelihood per sample, and the
    /// PSNR where the culled EM rendered the model at this iteration.
    Em { step: usize, total: usize, loglik: f64, psnr_db: Option<f64> },
    /// Refinement step `step` (from 1) of `total` and the PSNR before it.
    Refine { step: usize, total: usize, psnr_db: f64 },
}

/// One fit at K: the model, the EM report, and the times and PSNRs around it.
#[derive(Clone, Debug)]
pub struct Fitted {
    pub model: Model,
    pub report: FitReport,
    pub init_ms: f64,
    /// PSNR after EM, before refinement.
    pub em_psnr_db: f64,
    pub refine_ms: f64,
    /// PSNR of the returned model as `smoe render` renders it.
    pub psnr_db: f64,
}

/// EM iterations of the culled (image) fit between the renders that report the PSNR.
const PSNR_EVERY: usize = 5;

/// Fits `k` kernels to `grid`: the start, EM (tile-culled for images on the GPU),
/// refinement, and the PSNR of the model as `smoe render` renders it; on `ctx`'s GPU, or
/// with the f64 twins when `ctx` is None. `progress` hears of every step.
pub fn fit_kernels(
    ctx: Option<&Context>,
    grid: &Grid,
    k: usize,
    settings: &FitSettings,
    progress: &mut dyn FnMut(FitProgress),
) -> Result<Fitted> {
    let FitSettings { iterations, init, refine } = *settings;
    let start = std::time::Instant::now();
    let (mut done, total) = (0, init.steps(k));
    let first = init.model_on(ctx, grid, k, &mut || {
        done += 1;
        progress(FitProgress::Start { kernels: k, done, total });
    })?;
    let init_ms = kit::stats::ms_since(start);
    let mut em_tick = |step: usize, loglik: f64, psnr_db: Option<f64>| {
        progress(FitProgress::Em { step: step + 1, total: iterations, loglik, psnr_db })
    };
    let (model, report) = match ctx {
        Some(ctx) if grid.coord_dims() == 2 => {
            fit_gpu_culled(ctx, grid, first, iterations, PSNR_EVERY, |s| em_tick(s.iteration, s.loglik, s.psnr_db))?
        }
        Some(ctx) => fit_gpu_from(ctx, grid, first, iterations, |s, ll| em_tick(s, ll, None))?,
        None => fit_cpu(grid, first, iterations, |s, ll| em_tick(s, ll, None))?,
    };
    // A kernel whose statistics went non-finite in the EM's f32 arithmetic (seen once in a
    // budget search of a photo: a NaN prior) cannot be rendered or refined: it is left out,
    // as refinement leaves out one that diverges, and the others are the model.
    let (model, _) = model.without_invalid_kernels()?;
    let em_psnr_db = model_psnr(ctx, &model, grid)?;
    let (model, refine_ms) = if refine.steps == 0 {
        (model, 0.0)
    } else {
        let tick =
            |step: usize, psnr_db: f64| progress(FitProgress::Refine { step: step + 1, total: refine.steps, psnr_db });
        let (refined, report) = match ctx {
            Some(ctx) => refine_gpu(ctx, &model, grid, refine, tick)?,
            None => refine_cpu(&model, grid, refine, tick)?,
        };
        (refined, report.refine_ms)
    };
    let psnr_db = model_psnr(ctx, &model, grid)?;
    Ok(Fitted { model, report, init_ms, em_psnr_db, refine_ms, psnr_db })
}

/// PSNR of `model` against the grid it was fitted to, each view rendered by `render(uv)`;
/// for light fields the mean squared error is over every view.
fn psnr_over_views<E>(
    model: &Model,
    grid: &Grid,
    mut render: impl FnMut([f64; 2]) -> Result<Vec<f32>, E>,
) -> Result<f64, E> {
    let (nu, nv) = if grid.coord_dims() == 4 { (grid.extent[2], grid.extent[3]) } else { (1, 1) };
    let mut got = Vec::with_capacity(grid.rgb.len());
    let mut want = Vec::with_capacity(grid.rgb.len());
    for b in 0..nv {
        for a in 0..nu {
            got.extend(render(crate::cpu::render::view_coords(model, [a as f64, b as f64]))?);
            want.extend_from_slice(grid.view(a, b));
        }
    }
    Ok(psnr(&got, &want))
}

/// PSNR of `model` against `grid` as `smoe render` renders it: on `ctx`'s GPU, or with the
/// f64 reference when `ctx` is None.
pub fn model_psnr(ctx: Option<&Context>, model: &Model, grid: &Grid) -> Result<f64> {
    Ok(match ctx {
        Some(ctx) => render_psnr(ctx, model, grid)?,
        None => render_psnr_cpu(model, grid),
    })
}

/// PSNR of the model rendered on the GPU (exact culling, robust) against its grid.
pub fn render_psnr(ctx: &Context, model: &Model, grid: &Grid) -> engine::Result<f64> {
    let mut renderer = Renderer::new(ctx, model, Mode::Robust)?;
    psnr_over_views(model, grid, |uv| {
        let settings = RenderSettings {
            uv: [uv[0] as f32, uv[1] as f32],
            ..RenderSettings::new(grid.width() as u32, grid.height() as u32)
        };
        Ok(renderer.render_rgb(settings)?.0)
    })
}

/// PSNR of the model rendered by the f64 reference (all kernels) against its grid.
pub fn render_psnr_cpu(model: &Model, grid: &Grid) -> f64 {
    let render = |uv| {
        let rgb = crate::cpu::render::render(model, grid.width(), grid.height(), uv);
        Ok::<_, std::convert::Infallible>(rgb.iter().map(|&v| v as f32).collect())
    };
    match psnr_over_views(model, grid, render) {
        Ok(v) => v,
        Err(never) => match never {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The k-means start is reproducible, valid, and fits at least as well as the grid start.
    #[test]
    fn kmeans_init_is_deterministic_and_beats_grid() {
        let ctx = engine::testing::context();
        let grid = crate::data::sample_image(40, 32);
        let k = 24;
        let mut ticks = 0;
        let a = Init::Kmeans.model(&grid, k, &mut || ticks += 1);
        assert_eq!(ticks, Init::Kmeans.steps(k));
        assert_eq!(a, Init::Kmeans.model(&grid, k, &mut || {}));
        a.validate().unwrap();
        let fit = |init: Init| {
            let (m, _) = fit_gpu_from(ctx, &grid, init.model(&grid, k, &mut || {}), 8, |_, _| {}).unwrap();
            render_psnr(ctx, &m, &grid).unwrap()
        };
        let (kmeans, grid_psnr) = (fit(Init::Kmeans), fit(Init::Grid));
        assert!(kmeans >= grid_psnr, "k-means {kmeans:.2} dB < grid {grid_psnr:.2} dB");
        engine::testing::assert_no_validation_messages();
    }
}
