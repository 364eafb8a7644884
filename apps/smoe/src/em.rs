//! What the EM fits share on either backend ([`crate::cpu::em`], [`crate::gpu::em`]): the
//! covariance regularisation of a grid, the report of a run, and a model from the raw f32
//! records the GPU holds.

use crate::data::Grid;
use crate::model::Model;

/// Variance added to each diagonal entry after every M-step: a twelfth of a squared sample
/// spacing on each coordinate axis (the variance of a uniform pixel footprint, so no kernel
/// collapses onto one pixel), and (1/100)^2 on each colour channel.
pub fn regularisation(grid: &Grid) -> Vec<f64> {
    let mut reg: Vec<f64> = grid.extent.iter().map(|&e| 1.0 / (12.0 * (e * e) as f64)).collect();
    reg.extend([1e-4; 3]);
    reg
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
