//! The EM fitter: a full-covariance Gaussian mixture over the joint samples (x, y, [u, v],
//! r, g, b), started from k-means (default) or a regular grid of kernels, with covariance
//! regularisation.
//!
//! On the GPU each iteration is three passes and no host round trip: factor every kernel
//! (`em_prepare`), the E-step log-sum-exp per sample (`em_estep`), and the M-step, one
//! workgroup per kernel reducing its responsibility-weighted moments (`em_mstep`). The only
//! readback per iteration is one partial log-likelihood per E-step workgroup.
//! [`em_step_cpu`] is the f64 reference of one iteration.

use engine::{Context, Location, PipelineDesc};

use crate::data::{psnr, Grid};
use crate::gpu::{Mode, RenderSettings, Renderer};
use crate::kmeans::kmeans_init;
use crate::model::{cholesky_packed, packed_index, packed_len, ColorSpace, Model};
use crate::shaders;

const GROUP: u32 = 256;
const CHUNK: u32 = 64;

/// Variance added to each diagonal entry after every M-step: a twelfth of a squared sample
/// spacing on each coordinate axis (the variance of a uniform pixel footprint, so no kernel
/// collapses onto one pixel), and (1/100)^2 on each colour channel.
pub fn regularisation(grid: &Grid) -> Vec<f64> {
    let mut reg: Vec<f64> = grid.extent.iter().map(|&e| 1.0 / (12.0 * (e * e) as f64)).collect();
    reg.extend([1e-4; 3]);
    reg
}

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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Init {
    /// k-means++ seeding and Lloyd iterations on the joint samples (fixed seed).
    #[default]
    Kmeans,
    /// [`grid_init`].
    Grid,
}

/// Seed of the k-means++ seeding, fixed so that fits are reproducible.
const KMEANS_SEED: u64 = 0x5eed_50e5;

impl Init {
    /// The starting model of `k` kernels for `grid`.
    pub fn model(self, grid: &Grid, k: usize) -> Model {
        match self {
            Init::Kmeans => kmeans_init(grid, k, &regularisation(grid), KMEANS_SEED),
            Init::Grid => grid_init(grid, k),
        }
    }
}

impl std::str::FromStr for Init {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "kmeans" => Ok(Init::Kmeans),
            "grid" => Ok(Init::Grid),
            _ => Err(format!("unknown initialisation {s:?} (expected kmeans or grid)")),
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    samples: u32,
    kernels: u32,
    per_group: u32,
    pad: u32,
    reg: [f32; 8],
}

/// Timings and the log-likelihood trace of a fit.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FitReport {
    pub kernels: usize,
    pub samples: usize,
    pub iterations: usize,
    /// Mean joint log-likelihood per sample after each E-step.
    pub loglik: Vec<f64>,
    /// GPU time of all iterations (timestamps).
    pub gpu_ms: f64,
    /// Wall-clock time of the iterations.
    pub wall_ms: f64,
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
    fit_gpu_from(ctx, grid, Init::default().model(grid, k), iterations, progress)
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
    if n as u64 * d as u64 > u32::MAX as u64 / 4 {
        return Err(engine::EngineError::InvalidInput(format!("{n} samples are too many for one fit")));
    }
    let spec = [GROUP, d as u32, CHUNK];
    let pipe = |name: &str, spirv: &[u8], bindings: u32| {
        ctx.compute_pipeline(&PipelineDesc {
            name,
            spirv,
            bindings,
            push_bytes: std::mem::size_of::<Push>() as u32,
            spec: &spec,
        })
    };
    let prepare = pipe("em_prepare", shaders::EM_PREPARE, 2)?;
    let estep = pipe("em_estep", shaders::EM_ESTEP, 4)?;
    let mstep = pipe("em_mstep", shaders::EM_MSTEP, 4)?;
    let samples = ctx.upload(&grid.samples(), "smoe fit samples")?;
    let raw = ctx.upload(&init.raw_records(), "smoe fit kernels")?;
    let stride = d + packed_len(d) + 1;
    let prep = ctx.buffer::<f32>(k * stride, Location::Device, "smoe fit prepared")?;
    let lse = ctx.buffer::<f32>(n, Location::Device, "smoe fit lse")?;
    let sample_groups = (n as u32).div_ceil(GROUP);
    let partials = ctx.buffer::<f32>(sample_groups as usize, Location::Device, "smoe fit loglik partials")?;
    let mut reg = [0f32; 8];
    for (r, v) in reg.iter_mut().zip(regularisation(grid)) {
        *r = v as f32;
    }
    let push = Push { samples: n as u32, kernels: k as u32, per_group: GROUP, pad: 0, reg };
    let kernel_groups = (k as u32).div_ceil(GROUP);
    let mut report = FitReport { kernels: k, samples: n, iterations, loglik: Vec::new(), gpu_ms: 0.0, wall_ms: 0.0 };
    let start = std::time::Instant::now();
    for it in 0..iterations {
        let mut rec = ctx.recorder()?;
        rec.enable_profiling(4)?;
        rec.dispatch_linear(&prepare, &[raw.binding(), prep.binding()], &push, kernel_groups);
        rec.barrier();
        rec.dispatch_linear(
            &estep,
            &[samples.binding(), prep.binding(), lse.binding(), partials.binding()],
            &push,
            sample_groups,
        );
        rec.barrier();
        rec.dispatch_linear(
            &mstep,
            &[samples.binding(), prep.binding(), lse.binding(), raw.binding()],
            &push,
            k as u32,
        );
        rec.mark("em iteration");
        let passes = rec.submit()?.wait_profiled()?;
        report.gpu_ms += passes.iter().map(|p| p.ms).sum::<f64>();
        let ll = ctx.download(&partials)?.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        report.loglik.push(ll);
        progress(it, ll);
    }
    report.wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let params = ctx.download(&raw)?;
    Ok((model_from_raw(&init, &params), report))
}

/// PSNR of the model rendered (exact culling, robust) against the grid it was fitted to;
/// for light fields the mean squared error is over every view.
pub fn render_psnr(ctx: &Context, model: &Model, grid: &Grid) -> engine::Result<f64> {
    let mut renderer = Renderer::new(ctx, model, Mode::Robust)?;
    let (nu, nv) = if grid.coord_dims() == 4 { (grid.extent[2], grid.extent[3]) } else { (1, 1) };
    let mut got = Vec::with_capacity(grid.rgb.len());
    let mut want = Vec::with_capacity(grid.rgb.len());
    for b in 0..nv {
        for a in 0..nu {
            let uv = crate::reference::view_coords(model, [a as f64, b as f64]);
            let settings = RenderSettings {
                uv: [uv[0] as f32, uv[1] as f32],
                ..RenderSettings::new(grid.width() as u32, grid.height() as u32)
            };
            got.extend(renderer.render_rgb(settings)?.0);
            want.extend_from_slice(grid.view(a, b));
        }
    }
    Ok(psnr(&got, &want))
}

/// A model with `template`'s header and the raw f32 records `params`.
pub fn model_from_raw(template: &Model, params: &[f32]) -> Model {
    let d = template.dims();
    let stride = template.raw_stride();
    let mut m = Model { pi: Vec::new(), mu: Vec::new(), cov: Vec::new(), ..template.clone() };
    for rec in params.chunks_exact(stride) {
        m.pi.push(rec[0] as f64);
        m.mu.extend(rec[1..1 + d].iter().map(|&v| v as f64));
        m.cov.extend(rec[1 + d..].iter().map(|&v| v as f64));
    }
    m
}

/// One EM iteration in f64 (the reference of the GPU passes): returns the updated model
/// and the mean joint log-likelihood of the E-step.
pub fn em_step_cpu(model: &Model, samples: &[f32], reg: &[f64]) -> (Model, f64) {
    let d = model.dims();
    let k = model.len();
    let n = samples.len() / d;
    let tri = packed_len(d);
    let factors: Vec<(Vec<f64>, f64)> = (0..k)
        .map(|j| {
            let l = cholesky_packed(model.covariance(j), d).expect("regularised covariance");
            let half_logdet: f64 = (0..d).map(|i| l[packed_index(i, i)].ln()).sum();
            let c = model.pi[j].ln() - half_logdet - 0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln();
            (l, c)
        })
        .collect();
    let log_density = |j: usize, z: &[f32]| {
        let (l, c) = &factors[j];
        let mut y: Vec<f64> = (0..d).map(|i| z[i] as f64 - model.mean(j)[i]).collect();
        crate::reference::solve_lower(l, &mut y);
        c - 0.5 * y.iter().map(|v| v * v).sum::<f64>()
    };
    let mut stats = vec![0.0; k * (1 + d + tri)];
    let mut ll = 0.0;
    for z in samples.chunks_exact(d) {
        let logs: Vec<f64> = (0..k).map(|j| log_density(j, z)).collect();
        let mx = logs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = mx + logs.iter().map(|l| (l - mx).exp()).sum::<f64>().ln();
        ll += lse;
        for j in 0..k {
            let r = (logs[j] - lse).exp();
            let s = &mut stats[j * (1 + d + tri)..(j + 1) * (1 + d + tri)];
            let dz: Vec<f64> = (0..d).map(|i| z[i] as f64 - model.mean(j)[i]).collect();
            s[0] += r;
            for a in 0..d {
                s[1 + a] += r * dz[a];
                for b in 0..=a {
                    s[1 + d + packed_index(a, b)] += r * dz[a] * dz[b];
                }
            }
        }
    }
    let mut out = model.clone();
    for j in 0..k {
        let s = &stats[j * (1 + d + tri)..(j + 1) * (1 + d + tri)];
        let nk = s[0];
        if nk < 1e-3 {
            out.pi[j] = 1e-3 / n as f64;
            continue;
        }
        out.pi[j] = nk / n as f64;
        let delta: Vec<f64> = (0..d).map(|a| s[1 + a] / nk).collect();
        for a in 0..d {
            out.mu[j * d + a] += delta[a];
            for b in 0..=a {
                let mut v = s[1 + d + packed_index(a, b)] / nk - delta[a] * delta[b];
                if a == b {
                    v = v.max(0.0) + reg[a];
                }
                out.cov[j * tri + packed_index(a, b)] = v;
            }
        }
    }
    (out, ll / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::sample_lightfield;

    /// One GPU iteration against the f64 reference, for an image and a light field, at
    /// sample and kernel counts that are not multiples of the workgroup size.
    #[test]
    fn gpu_iteration_matches_cpu() {
        let ctx = engine::testing::context();
        for grid in [sample_lightfield(23, 17, 1, 1, 0.0), sample_lightfield(9, 7, 3, 2, 1.0)] {
            let k = 13;
            let init = grid_init(&grid, k);
            let (want, want_ll) = em_step_cpu(&init, &grid.samples(), &regularisation(&grid));
            let (got, report) = fit_gpu_from(ctx, &grid, init, 1, |_, _| {}).unwrap();
            assert!((report.loglik[0] - want_ll).abs() < 1e-4 * want_ll.abs().max(1.0), "{report:?} vs {want_ll}");
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
        engine::testing::assert_no_validation_messages();
    }

    /// The k-means start is reproducible, valid, and fits at least as well as the grid start.
    #[test]
    fn kmeans_init_is_deterministic_and_beats_grid() {
        let ctx = engine::testing::context();
        let grid = crate::data::sample_image(40, 32);
        let k = 24;
        let a = Init::Kmeans.model(&grid, k);
        assert_eq!(a, Init::Kmeans.model(&grid, k));
        a.validate().unwrap();
        let fit = |init: Init| {
            let (m, _) = fit_gpu_from(ctx, &grid, init.model(&grid, k), 8, |_, _| {}).unwrap();
            render_psnr(ctx, &m, &grid).unwrap()
        };
        let (kmeans, grid_psnr) = (fit(Init::Kmeans), fit(Init::Grid));
        assert!(kmeans >= grid_psnr, "k-means {kmeans:.2} dB < grid {grid_psnr:.2} dB");
        engine::testing::assert_no_validation_messages();
    }
}
