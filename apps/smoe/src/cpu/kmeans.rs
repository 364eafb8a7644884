//! The k-means initialisation of the EM fitter: k-means++ seeding (deterministic for a seed)
//! and a few Lloyd iterations on the joint samples, on the CPU with rayon; each cluster
//! becomes one kernel with its share of the samples, its mean and its (regularised)
//! covariance. It places kernels where the colour changes, which a regular grid does not.
//! [`crate::gpu::kmeans`] is its GPU twin (same seed, same random numbers, same rules); the
//! centre updates and the final model (`lloyd`, `model_from_labels`) are shared.

use kit::rng::Rng;
use rayon::prelude::*;

use crate::data::Grid;
use crate::model::{packed_len, ColorSpace, Model};

/// Lloyd iterations after seeding: enough to settle the seeds; EM does the rest.
const LLOYD_ITERATIONS: usize = 10;

/// The progress steps of [`kmeans_init`] for `k` kernels: one per seed (each a pass over
/// every sample), one per Lloyd iteration.
pub fn steps(k: usize) -> u64 {
    (k + LLOYD_ITERATIONS) as u64
}

fn dist2(a: &[f32], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(&x, &y)| (x as f64 - y).powi(2)).sum()
}

/// Uniform in 0..n by scaling a uniform draw (not by modulo, as [`Rng::below`] does): the
/// seeding has always drawn this way, so seeds give the same picks.
pub(crate) fn below(rng: &mut Rng, n: usize) -> usize {
    ((rng.uniform() * n as f64) as usize).min(n - 1)
}

/// Index of the centre nearest to `s` (`centres` is `k x d`).
fn nearest(s: &[f32], centres: &[f64], d: usize) -> usize {
    let mut best = (f64::INFINITY, 0);
    for (j, c) in centres.chunks_exact(d).enumerate() {
        let e = dist2(s, c);
        if e < best.0 {
            best = (e, j);
        }
    }
    best.1
}

/// The nearest centre of every sample.
pub(crate) fn nearest_labels(samples: &[f32], centres: &[f64], d: usize) -> Vec<u32> {
    samples.par_chunks_exact(d).map(|s| nearest(s, centres, d) as u32).collect()
}

/// The centres at the given sample indices, in f64.
pub(crate) fn centres_at(samples: &[f32], picks: &[u32], d: usize) -> Vec<f64> {
    picks.iter().flat_map(|&p| samples[p as usize * d..(p as usize + 1) * d].iter().map(|&v| v as f64)).collect()
}

/// k-means++ seeding: the first centre uniformly, each next one with probability
/// proportional to the squared distance to the nearest centre chosen so far. Returns the
/// chosen sample indices and the final squared distances D.
pub(crate) fn seed_picks(
    samples: &[f32],
    d: usize,
    k: usize,
    rng: &mut Rng,
    tick: &mut dyn FnMut(),
) -> (Vec<u32>, Vec<f64>) {
    let n = samples.len() / d;
    let mut picks = vec![below(rng, n) as u32];
    tick();
    let first = centres_at(samples, &picks, d);
    let mut near: Vec<f64> = samples.par_chunks_exact(d).map(|s| dist2(s, &first)).collect();
    while picks.len() < k {
        let total: f64 = near.iter().sum();
        // All samples coincide with a centre: any sample will do.
        let pick = if total > 0.0 {
            let mut target = rng.uniform() * total;
            near.iter()
                .position(|&e| {
                    target -= e;
                    target < 0.0
                })
                .unwrap_or(n - 1)
        } else {
            below(rng, n)
        };
        picks.push(pick as u32);
        let c = centres_at(samples, &[pick as u32], d);
        near.par_iter_mut().zip(samples.par_chunks_exact(d)).for_each(|(e, s)| *e = e.min(dist2(s, &c)));
        tick();
    }
    (picks, near)
}

/// [`LLOYD_ITERATIONS`] Lloyd iterations from `centres` with `assign` giving the nearest
/// centre of every sample (CPU or GPU); centres are then the means of their samples, in f64
/// on the host (a pass over the labels, cheap next to the assignment). Ticks once per
/// iteration; returns the final assignment.
pub(crate) fn lloyd<E>(
    samples: &[f32],
    d: usize,
    centres: &mut [f64],
    mut assign: impl FnMut(&[f64]) -> Result<Vec<u32>, E>,
    tick: &mut dyn FnMut(),
) -> Result<Vec<u32>, E> {
    let k = centres.len() / d;
    for _ in 0..LLOYD_ITERATIONS {
        let label = assign(centres)?;
        let (count, sum) = cluster_sums(samples, &label, d, k);
        for j in 0..k {
            // An emptied cluster keeps its centre.
            if count[j] > 0.0 {
                for a in 0..d {
                    centres[j * d + a] = sum[j * d + a] / count[j];
                }
            }
        }
        tick();
    }
    assign(centres)
}

/// Per-cluster sample counts and coordinate sums of an assignment.
fn cluster_sums(samples: &[f32], label: &[u32], d: usize, k: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut count, mut sum) = (vec![0.0; k], vec![0.0; k * d]);
    for (s, &j) in samples.chunks_exact(d).zip(label) {
        let j = j as usize;
        count[j] += 1.0;
        for (acc, &v) in sum[j * d..(j + 1) * d].iter_mut().zip(s) {
            *acc += v as f64;
        }
    }
    (count, sum)
}

/// Sum of squared distances of the samples to their assigned centres (the k-means cost).
pub fn inertia(samples: &[f32], centres: &[f64], label: &[u32], d: usize) -> f64 {
    samples.chunks_exact(d).zip(label).map(|(s, &j)| dist2(s, &centres[j as usize * d..(j as usize + 1) * d])).sum()
}

/// `k` kernels from k-means on the joint samples of `grid` (`k` at most the sample count):
/// weights are cluster shares, means the centroids, covariances the cluster covariances
/// plus `reg` on the diagonal (so single-sample clusters stay positive definite).
/// `tick` is called [`steps`]`(k)` times, as the work advances.
pub fn kmeans_init(grid: &Grid, k: usize, reg: &[f64], seed: u64, tick: &mut dyn FnMut()) -> Model {
    let samples = grid.samples();
    let d = grid.coord_dims() + 3;
    let (picks, _) = seed_picks(&samples, d, k, &mut Rng::new(seed), tick);
    let mut centres = centres_at(&samples, &picks, d);
    let assign = |c: &[f64]| Ok::<_, std::convert::Infallible>(nearest_labels(&samples, c, d));
    let Ok(label) = lloyd(&samples, d, &mut centres, assign, tick);
    model_from_labels(grid, &samples, &centres, &label, reg)
}

/// The model of a final assignment: each cluster's share, mean and covariance about it
/// (an empty cluster keeps its centre).
pub(crate) fn model_from_labels(grid: &Grid, samples: &[f32], centres: &[f64], label: &[u32], reg: &[f64]) -> Model {
    let d = grid.coord_dims() + 3;
    let k = centres.len() / d;
    let n = samples.len() / d;
    let pl = packed_len(d);
    let (count, mut mean) = cluster_sums(samples, label, d, k);
    let mut scatter = vec![0.0; k * pl];
    for j in 0..k {
        for a in 0..d {
            mean[j * d + a] = if count[j] > 0.0 { mean[j * d + a] / count[j] } else { centres[j * d + a] };
        }
    }
    for (s, &j) in samples.chunks_exact(d).zip(label) {
        let j = j as usize;
        let m = &mean[j * d..(j + 1) * d];
        let mut idx = j * pl;
        for a in 0..d {
            for b in 0..=a {
                scatter[idx] += (s[a] as f64 - m[a]) * (s[b] as f64 - m[b]);
                idx += 1;
            }
        }
    }
    let mut cov = Vec::with_capacity(k * pl);
    for (&cnt, sc) in count.iter().zip(scatter.chunks_exact(pl)) {
        let mut idx = 0;
        for (a, &ra) in reg.iter().enumerate().take(d) {
            for b in 0..=a {
                let c = if cnt > 0.0 { sc[idx] / cnt } else { 0.0 };
                cov.push(if a == b { c + ra } else { c });
                idx += 1;
            }
        }
    }
    // An empty cluster still needs pi > 0: give it one sample's share.
    let pi: Vec<f64> = count.iter().map(|&c| c.max(1.0) / n as f64).collect();
    let total: f64 = pi.iter().sum();
    Model {
        coord_dims: grid.coord_dims(),
        color_dims: 3,
        color_space: ColorSpace::Rgb,
        extent: grid.extent.clone(),
        pi: pi.iter().map(|p| p / total).collect(),
        mu: mean,
        cov,
    }
}
