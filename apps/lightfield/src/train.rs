//! Training the dictionary ensemble (after Miandji et al. 2013/2015): start each of the K
//! dictionaries from the HOSVD of a random share of the training patches (eigenvectors of
//! each mode's unfolding Gram matrix), then alternate
//! 1. assignment: every patch goes to the dictionary that represents it with the fewest
//!    coefficients at the error threshold (the encoder itself, on the GPU or the CPU);
//! 2. update: for each dictionary and each mode n in turn, with the patches' sparse
//!    coefficients S fixed, the orthonormal U_n minimising sum ||T - S x_1 U_1 ... x_5 U_5||^2
//!    is the polar factor of sum T_(n) Z_(n)^T, Z = S multiplied by every other mode's matrix
//!    (orthogonal Procrustes, via the SVD of that m x m matrix).
//!
//! Deterministic for a seed: the random split uses ChaCha8, and every sum is reduced in a
//! fixed order.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rayon::prelude::*;

use crate::decoder::decode_patches_cpu;
use crate::dictionary::{mode_offsets, mode_products_except, Ensemble};
use crate::encoder::{encode_patches_cpu, Codes, Limit, Params};
use crate::error::{LfError, Result};
use crate::gpu::GpuCodec;
use crate::lightfield::LightField;
use crate::linalg::{polar, svd, Mat};
use crate::patch::{PatchGrid, PatchShape, MODES};
use crate::select::Quantizer;

#[derive(Clone, Copy, Debug)]
pub struct TrainOptions {
    pub k: usize,
    pub shape: PatchShape,
    pub iterations: usize,
    /// Threshold and sparsity the assignment step encodes with.
    pub params: Params,
    pub seed: u64,
    /// Training patches are a random subset of at most this many.
    pub max_patches: usize,
}

/// Progress of one training iteration (measured at its assignment step).
#[derive(Clone, Debug, serde::Serialize)]
pub struct IterationStats {
    pub iteration: usize,
    pub mean_coefficients: f64,
    pub success_fraction: f64,
    pub psnr_db: f64,
}

impl std::fmt::Display for IterationStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "iteration {}: {:.1} coefficients per patch, {:.1}% within epsilon, PSNR {:.2} dB",
            self.iteration,
            self.mean_coefficients,
            100.0 * self.success_fraction,
            self.psnr_db
        )
    }
}

/// Where the assignment step runs.
pub enum TrainDevice<'a> {
    Cpu,
    Gpu(&'a engine::Context),
}

/// All patches of the training light fields (or a random subset), patch-major.
fn training_patches(lfs: &[LightField], opts: &TrainOptions) -> Vec<f32> {
    let plen = opts.shape.len();
    let mut all = Vec::new();
    for lf in lfs {
        let grid = PatchGrid::new(opts.shape, lf.u, lf.v, lf.h, lf.w);
        all.extend(grid.gather(lf, 0..grid.len()));
    }
    let n = all.len() / plen;
    if n <= opts.max_patches {
        return all;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(opts.seed ^ 0x5eed));
    order.truncate(opts.max_patches);
    order.sort_unstable();
    order.iter().flat_map(|&p| all[p * plen..(p + 1) * plen].iter().copied()).collect()
}

/// `sum_i A_i(n) B_i(n)^T` over the patches `ids`: the m x m cross-Gram matrix of mode `n`.
fn mode_gram(
    shape: PatchShape,
    n: usize,
    ids: &[usize],
    a: impl Fn(usize) -> Vec<f32> + Sync,
    b: impl Fn(usize) -> Vec<f32> + Sync,
) -> Mat {
    let m = shape.modes()[n];
    let s = shape.strides()[n];
    let plen = shape.len();
    let partial = |i: usize| {
        let (ta, tb) = (a(i), b(i));
        let mut g = vec![0f64; m * m];
        for outer in 0..plen / (m * s) {
            for inner in 0..s {
                let base = outer * m * s + inner;
                for r in 0..m {
                    let x = ta[base + r * s] as f64;
                    for c in 0..m {
                        g[r * m + c] += x * tb[base + c * s] as f64;
                    }
                }
            }
        }
        g
    };
    // Fixed-size blocks reduced in order keep the sum independent of thread scheduling.
    let blocks: Vec<Vec<f64>> = ids
        .par_chunks(64)
        .map(|chunk| {
            chunk.iter().fold(vec![0f64; m * m], |mut acc, &i| {
                acc.iter_mut().zip(partial(i)).for_each(|(x, y)| *x += y);
                acc
            })
        })
        .collect();
    let mut g = Mat::zeros(m);
    for b in blocks {
        g.a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
    }
    g
}

/// Stores `m` as the mode-`n` matrix of dictionary `k`.
fn set_matrix(ens: &mut Ensemble, k: usize, n: usize, m: &Mat) {
    let (offsets, dlen) = mode_offsets(ens.shape);
    let start = k * dlen + offsets[n];
    ens.mats[start..start + m.a.len()].iter_mut().zip(&m.a).for_each(|(d, &x)| *d = x as f32);
}

/// Initial ensemble: dictionary k is the HOSVD basis of the k-th share of a random split.
fn initial_ensemble(patches: &[f32], opts: &TrainOptions) -> Ensemble {
    let plen = opts.shape.len();
    let n = patches.len() / plen;
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(opts.seed));
    let mut ens = Ensemble::random(opts.shape, opts.k, opts.seed);
    for k in 0..opts.k {
        let ids: Vec<usize> = order.iter().skip(k).step_by(opts.k).copied().collect();
        if ids.is_empty() {
            continue;
        }
        let get = |i: usize| patches[i * plen..(i + 1) * plen].to_vec();
        for n in 0..MODES {
            set_matrix(&mut ens, k, n, &svd(&mode_gram(opts.shape, n, &ids, get, get)).u);
        }
    }
    ens
}

/// One Procrustes sweep over the modes of dictionary `k` for its patches `ids`.
fn update_dictionary(ens: &mut Ensemble, k: usize, ids: &[usize], patches: &[f32], codes: &Codes, step: f32) {
    let q = Quantizer::new(step);
    let shape = ens.shape;
    let plen = shape.len();
    for n in 0..MODES {
        let dict = ens.dictionary(k).to_vec();
        let coefficients = |i: usize| {
            let mut z = vec![0f32; plen];
            for c in codes.offsets[i]..codes.offsets[i + 1] {
                z[codes.locations[c] as usize] = q.value(codes.levels[c]);
            }
            mode_products_except(&mut z, shape, &dict, false, Some(n));
            z
        };
        let patch = |i: usize| patches[i * plen..(i + 1) * plen].to_vec();
        let cross = mode_gram(shape, n, ids, patch, coefficients);
        if cross.a.iter().all(|&x| x.abs() < 1e-12) {
            continue;
        }
        set_matrix(ens, k, n, &polar(&cross));
    }
}

fn assign(
    patches: &[f32],
    limits: &[Limit],
    ens: &Ensemble,
    params: Params,
    device: &TrainDevice<'_>,
) -> Result<Codes> {
    Ok(match device {
        TrainDevice::Cpu => encode_patches_cpu(patches, limits, ens, params),
        TrainDevice::Gpu(ctx) => GpuCodec::new(ctx, ens)?.encode_patches(patches, limits, params)?.0,
    })
}

fn stats(iteration: usize, patches: &[f32], codes: &Codes, ens: &Ensemble, step: f32) -> IterationStats {
    let n = codes.len().max(1);
    let decoded = decode_patches_cpu(codes, ens, &vec![step; codes.len()], 0..codes.len());
    IterationStats {
        iteration,
        mean_coefficients: codes.locations.len() as f64 / n as f64,
        success_fraction: codes.success.iter().filter(|&&s| s).count() as f64 / n as f64,
        psnr_db: crate::lightfield::psnr(patches, &decoded),
    }
}

/// Trains an ensemble on `lfs`; `progress` sees each iteration's statistics.
pub fn train(
    lfs: &[LightField],
    opts: &TrainOptions,
    device: TrainDevice<'_>,
    mut progress: impl FnMut(&IterationStats),
) -> Result<Ensemble> {
    opts.shape.check()?;
    opts.params.check(opts.shape.len())?;
    if opts.k == 0 || opts.k > crate::dictionary::MAX_DICTIONARIES {
        return Err(LfError::Invalid(format!("--dictionaries {}: expected at least 1", opts.k)));
    }
    if lfs.is_empty() {
        return Err(LfError::Invalid("no training light fields".into()));
    }
    let plen = opts.shape.len();
    let patches = training_patches(lfs, opts);
    let n = patches.len() / plen;
    let mode_sum: usize = opts.shape.modes().iter().sum();
    // Training patches count as whole (their padding is part of what they teach).
    let limits: Vec<Limit> = patches
        .chunks(plen)
        .map(|p| {
            Limit::new(opts.params, plen, plen, p.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt(), mode_sum)
        })
        .collect();
    let step = opts.params.base_step();
    let mut ens = initial_ensemble(&patches, opts);
    for iteration in 0..opts.iterations {
        let codes = assign(&patches, &limits, &ens, opts.params, &device)?;
        progress(&stats(iteration, &patches, &codes, &ens, step));
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); opts.k];
        for i in 0..n {
            members[codes.membership[i] as usize].push(i);
        }
        for (k, ids) in members.iter().enumerate() {
            if !ids.is_empty() {
                update_dictionary(&mut ens, k, ids, &patches, &codes, step);
            }
        }
    }
    let codes = assign(&patches, &limits, &ens, opts.params, &device)?;
    progress(&stats(opts.iterations, &patches, &codes, &ens, step));
    ens.validate()?;
    Ok(ens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn training_is_deterministic_and_does_not_lose_quality() {
        let lfs = [crate::synth::generate((4, 4), (25, 20), 31)];
        let opts = TrainOptions {
            k: 2,
            shape: PatchShape { my: 5, mx: 5, mu: 4, mv: 4 },
            iterations: 2,
            params: Params { sparsity: 300, epsilon: 0.02 },
            seed: 9,
            max_patches: 1000,
        };
        let mut psnr = Vec::new();
        let a = train(&lfs, &opts, TrainDevice::Cpu, |s| psnr.push(s.psnr_db)).unwrap();
        let b = train(&lfs, &opts, TrainDevice::Cpu, |_| {}).unwrap();
        assert_eq!(a, b);
        a.validate().unwrap();
        assert_eq!(psnr.len(), 3);
        assert!(psnr[2] >= psnr[0] - 0.1, "training made the fit worse: {psnr:?}");
        let other = train(&lfs, &TrainOptions { seed: 10, ..opts }, TrainDevice::Cpu, |_| {}).unwrap();
        assert_ne!(a, other);
    }
}
