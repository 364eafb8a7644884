//! The dense EM in f64 on all cores: [`em_step_cpu`] is the twin of one GPU iteration
//! ([`crate::gpu::em`]: the same E- and M-step, rayon over samples, `--backend cpu`);
//! [`fit_cpu`] runs it from the same start as [`crate::gpu::em::fit_gpu_from`].

use rayon::prelude::*;

use crate::data::Grid;
use crate::em::{regularisation, FitReport};
use crate::model::{cholesky_packed, packed_index, packed_len, Model, ModelError};

/// Runs `iterations` EM iterations in f64 on all cores from the model `init` (fitted to
/// `grid`), calling `progress(iteration, loglik)` after each: the CPU twin of
/// [`fit_gpu_from`].
pub fn fit_cpu(
    grid: &Grid,
    init: Model,
    iterations: usize,
    mut progress: impl FnMut(usize, f64),
) -> Result<(Model, FitReport), ModelError> {
    let samples = grid.samples();
    let reg = regularisation(grid);
    let start = std::time::Instant::now();
    let mut report = FitReport::new(init.len(), grid.len(), iterations);
    let mut model = init;
    for it in 0..iterations {
        let (next, ll) = em_step_cpu(&model, &samples, &reg)?;
        model = next;
        report.loglik.push(ll);
        progress(it, ll);
    }
    report.em_ms = start.elapsed().as_secs_f64() * 1e3;
    Ok((model, report))
}

/// Samples per rayon task of the CPU E-step.
const CPU_CHUNK: usize = 1024;

/// One EM iteration in f64 on all cores (the twin of the GPU passes: the same log-sum-exp
/// E-step, responsibilities below 1e-30 (or NaN) skipped, the same M-step with its floor on a
/// kernel's weight, its regularisation and its repair of an indefinite covariance): returns
/// the updated model and the mean joint log-likelihood of the E-step.
pub fn em_step_cpu(model: &Model, samples: &[f32], reg: &[f64]) -> Result<(Model, f64), ModelError> {
    let d = model.dims();
    let k = model.len();
    let n = samples.len() / d;
    let tri = packed_len(d);
    let stride = 1 + d + tri;
    let factors: Vec<(Vec<f64>, f64)> = (0..k)
        .into_par_iter()
        .map(|j| {
            let l = cholesky_packed(model.covariance(j), d).ok_or_else(|| ModelError::Kernel {
                index: j,
                message: "EM reached a covariance that is not positive definite".into(),
            })?;
            let half_logdet: f64 = (0..d).map(|i| l[packed_index(i, i)].ln()).sum();
            let c = model.pi[j].ln() - half_logdet - 0.5 * d as f64 * (2.0 * std::f64::consts::PI).ln();
            Ok((l, c))
        })
        .collect::<Result<_, ModelError>>()?;
    let log_density = |j: usize, z: &[f32], y: &mut [f64]| {
        let (l, c) = &factors[j];
        for (yi, (&zi, &mi)) in y.iter_mut().zip(z.iter().zip(model.mean(j))) {
            *yi = zi as f64 - mi;
        }
        crate::cpu::render::solve_lower(l, y);
        c - 0.5 * y.iter().map(|v| v * v).sum::<f64>()
    };
    let zero = || (vec![0.0; k * stride], 0.0);
    let (stats, ll) = samples
        .par_chunks(CPU_CHUNK * d)
        .fold(zero, |(mut stats, mut ll), chunk| {
            let (mut logs, mut y, mut dz) = (vec![0.0; k], vec![0.0; d], vec![0.0; d]);
            for z in chunk.chunks_exact(d) {
                for (j, lj) in logs.iter_mut().enumerate() {
                    *lj = log_density(j, z, &mut y);
                }
                let mx = logs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let lse = mx + logs.iter().map(|l| (l - mx).exp()).sum::<f64>().ln();
                ll += lse;
                for j in 0..k {
                    let r = (logs[j] - lse).exp();
                    if r.is_nan() || r < 1e-30 {
                        continue;
                    }
                    let s = &mut stats[j * stride..(j + 1) * stride];
                    for (dzi, (&zi, &mi)) in dz.iter_mut().zip(z.iter().zip(model.mean(j))) {
                        *dzi = zi as f64 - mi;
                    }
                    s[0] += r;
                    for a in 0..d {
                        s[1 + a] += r * dz[a];
                        for b in 0..=a {
                            s[1 + d + packed_index(a, b)] += r * dz[a] * dz[b];
                        }
                    }
                }
            }
            (stats, ll)
        })
        .reduce(zero, |(mut a, la), (b, lb)| {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
            (a, la + lb)
        });
    let mut out = model.clone();
    for j in 0..k {
        let s = &stats[j * stride..(j + 1) * stride];
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
        crate::em::keep_factorable(&mut out.cov[j * tri..(j + 1) * tri], reg, d);
    }
    Ok((out, ll / n as f64))
}
