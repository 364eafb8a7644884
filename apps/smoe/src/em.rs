//! What the EM fits share on either backend ([`crate::cpu::em`], [`crate::gpu::em`]): the
//! covariance regularisation of a grid and the repair of a covariance rounding left
//! indefinite, the report of a run, and a model from the raw f32 records the GPU holds.

use crate::data::Grid;
use crate::model::{packed_index, Model};

/// Variance added to each diagonal entry after every M-step: a twelfth of a squared sample
/// spacing on each coordinate axis (the variance of a uniform pixel footprint, so no kernel
/// collapses onto one pixel), and (1/100)^2 on each colour channel.
pub fn regularisation(grid: &Grid) -> Vec<f64> {
    let mut reg: Vec<f64> = grid.extent.iter().map(|&e| 1.0 / (12.0 * (e * e) as f64)).collect();
    reg.extend([1e-4; 3]);
    reg
}

/// Keeps an M-step's covariance (packed lower, `d x d`, `reg` already on its diagonal)
/// factorable. In exact arithmetic every Cholesky pivot of a PSD matrix plus diag(reg) is at
/// least reg_i, but the sums of a wide, thin kernel, whose spread across is near the
/// regulariser, can round to an indefinite matrix (in the GPU's f32 far more than here), and
/// one such kernel would make the next E-step NaN wherever it reaches. A covariance with a
/// pivot under half its regulariser becomes L L^T with that pivot raised to the regulariser;
/// any other is left bit for bit. The twin of `keep_factorable` in shaders/smoe/em_mstats.glsl.
pub fn keep_factorable(cov: &mut [f64], reg: &[f64], d: usize) {
    let mut l = vec![0.0; cov.len()];
    let mut repaired = false;
    for i in 0..d {
        for j in 0..=i {
            let mut s = cov[packed_index(i, j)];
            for m in 0..j {
                s -= l[packed_index(i, m)] * l[packed_index(j, m)];
            }
            if i == j {
                if s.is_nan() || s < 0.5 * reg[i] {
                    s = reg[i];
                    repaired = true;
                }
                l[packed_index(i, i)] = s.sqrt();
            } else {
                l[packed_index(i, j)] = s / l[packed_index(j, j)];
            }
        }
    }
    if repaired {
        for i in 0..d {
            for j in 0..=i {
                cov[packed_index(i, j)] = (0..=j).map(|m| l[packed_index(i, m)] * l[packed_index(j, m)]).sum();
            }
        }
    }
}

/// Timings and the log-likelihood trace of a fit.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FitReport {
    pub kernels: usize,
    pub samples: usize,
    pub iterations: usize,
    /// Mean joint log-likelihood per sample after each E-step.
    pub loglik: Vec<f64>,
    /// GPU time of all iterations (timestamps); None on the CPU.
    pub gpu_ms: Option<f64>,
    /// Wall-clock time of the iterations (the start is not included).
    pub em_ms: f64,
    /// Tile-list entries of the last iteration of the culled EM (kernels per tile times
    /// tiles); None for the dense passes.
    pub list_entries: Option<usize>,
}

impl FitReport {
    /// The report of `iterations` iterations with `kernels` kernels over `samples` samples,
    /// before they run.
    pub(crate) fn new(kernels: usize, samples: usize, iterations: usize) -> FitReport {
        FitReport { kernels, samples, iterations, loglik: Vec::new(), gpu_ms: None, em_ms: 0.0, list_entries: None }
    }
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

#[cfg(test)]
mod tests {
    use super::keep_factorable;
    use crate::model::cholesky_packed;

    /// A covariance rounding left indefinite (a pivot below zero) comes back factorable with
    /// every pivot at least its regulariser; a factorable one comes back unchanged.
    #[test]
    fn indefinite_covariances_are_repaired() {
        let reg = [1e-6, 1e-6, 1e-4];
        // x and y almost perfectly correlated, the determinant of the leading block negative.
        let mut cov = vec![0.05, 0.050001, 0.05, 0.001, 0.002, 0.01];
        assert!(cholesky_packed(&cov, 3).is_none());
        keep_factorable(&mut cov, &reg, 3);
        let l = cholesky_packed(&cov, 3).expect("repaired");
        assert!(cov.iter().all(|v| v.is_finite()));
        assert!((cov[0] - 0.05).abs() < 1e-15 && (cov[1] - 0.050001).abs() < 1e-15);
        for (i, r) in reg.iter().enumerate() {
            let p = l[i * (i + 1) / 2 + i];
            assert!(p * p >= 0.5 * r, "pivot {i}: {}", p * p);
        }
        let healthy = vec![0.05, 0.01, 0.04, 0.001, 0.002, 0.01];
        let mut same = healthy.clone();
        keep_factorable(&mut same, &reg, 3);
        assert_eq!(same, healthy);
    }
}
