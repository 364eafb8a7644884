//! The SoftAssign stage on the CPU in f64 (rayon): the twin of [`crate::gpu::softassign`]
//! and the benchmark baseline. Same passes as the GPU: a row pass that normalises rows and sums the
//! row-normalised columns, then a column pass with the outlier row that scales each column
//! to its capacity (the uses a tile may have).

use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::matrix::DistanceMatrix;
use crate::softassign::{capacity, discretise, scale_of, Potentials, SoftAssignParams, CLAMP_F64};

/// Rows per rayon task in the row pass (each task keeps one column-sum vector).
const ROWS_PER_TASK: usize = 16;

/// SoftAssign state on the CPU.
pub struct CpuSoftAssign<'a> {
    d: &'a DistanceMatrix,
    alpha: f64,
    /// ln of the uses each tile may have (the column marginal).
    log_capacity: f64,
    pub potentials: Potentials,
}

impl<'a> CpuSoftAssign<'a> {
    /// Starts from f = g = 0 (the first row pass then sees M = exp(-(D - alpha) / t)); each
    /// tile may be used `repeat` times (its column's marginal).
    pub fn new(d: &'a DistanceMatrix, params: &SoftAssignParams, repeat: usize) -> Self {
        let alpha = params.alpha * scale_of(d);
        CpuSoftAssign {
            d,
            alpha,
            log_capacity: capacity(d, repeat).ln(),
            potentials: Potentials { f: vec![0.0; d.rows], g: vec![0.0; d.cols] },
        }
    }

    /// One Sinkhorn iteration at temperature `t`.
    pub fn sinkhorn(&mut self, t: f64) {
        let (d, alpha, n) = (self.d, self.alpha, self.d.cols);
        let g = &self.potentials.g;
        let col_sums = self
            .potentials
            .f
            .par_chunks_mut(ROWS_PER_TASK)
            .enumerate()
            .map(|(chunk, fs)| {
                let mut acc = vec![0.0f64; n];
                let mut e = vec![0.0f64; n];
                for (k, fi) in fs.iter_mut().enumerate() {
                    let row = d.row(chunk * ROWS_PER_TASK + k);
                    let mut s = 0.0;
                    for j in 0..n {
                        e[j] = ((*fi + g[j] - (row[j] - alpha)) / t).clamp(-CLAMP_F64, CLAMP_F64).exp();
                        s += e[j];
                    }
                    *fi -= t * s.ln();
                    let inv = 1.0 / s;
                    for j in 0..n {
                        acc[j] += e[j] * inv;
                    }
                }
                acc
            })
            .reduce(
                || vec![0.0f64; n],
                |mut a, b| {
                    a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                    a
                },
            );
        let log_capacity = self.log_capacity;
        self.potentials.g.par_iter_mut().zip(&col_sums).for_each(|(gj, &c)| {
            let outlier = (*gj / t).clamp(-CLAMP_F64, CLAMP_F64).exp();
            *gj -= t * ((c + outlier).ln() - log_capacity);
        });
    }

    /// One cooling iteration (stabilisations x Sinkhorn iterations) at temperature `t`.
    pub fn cooling_iteration(&mut self, t: f64, params: &SoftAssignParams) {
        for _ in 0..params.per_temperature() {
            self.sinkhorn(t);
        }
    }

    /// M[i][j] for the current potentials at temperature `t` (tests compare it with the GPU).
    pub fn matrix(&self, t: f64) -> Vec<f64> {
        let (d, p) = (self.d, &self.potentials);
        (0..d.rows)
            .into_par_iter()
            .flat_map_iter(|i| {
                (0..d.cols).map(move |j| {
                    ((p.f[i] + p.g[j] - (d.at(i, j) - self.alpha)) / t).clamp(-CLAMP_F64, CLAMP_F64).exp()
                })
            })
            .collect()
    }
}

/// Full SoftAssign on the CPU, each tile used at most `repeat` times: the temperature loop
/// (`progress` advances once per cooling iteration), then the discretisation.
pub fn solve(d: &DistanceMatrix, params: &SoftAssignParams, repeat: usize, progress: &ProgressBar) -> Vec<usize> {
    let scale = scale_of(d);
    let mut state = CpuSoftAssign::new(d, params, repeat);
    for k in 0..params.iterations {
        state.cooling_iteration(params.temperature(k, scale), params);
        progress.inc(1);
    }
    discretise(d, &state.potentials, repeat)
}
