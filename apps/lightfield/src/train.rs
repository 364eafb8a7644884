//! Training the dictionary ensemble (after Miandji et al. 2013/2015): start each of the K
//! dictionaries from the HOSVD of its share of the training patches (eigenvectors of each
//! mode's unfolding Gram matrix; shares are a random split, or with `precluster` the
//! k-means clusters of TOG 2019's pre-clustering, see [`cluster`]), then alternate
//! 1. assignment: every patch goes to the dictionary that represents it with the fewest
//!    coefficients at the error threshold (the encoder itself, on the GPU or the CPU);
//! 2. update: for each mode n in turn and every dictionary, with the patches' sparse
//!    coefficients S fixed, the orthonormal U_n minimising sum ||T - S x_1 U_1 ... x_5 U_5||^2
//!    is the polar factor of sum T_(n) Z_(n)^T, Z = S multiplied by every other mode's matrix
//!    (orthogonal Procrustes, via the SVD of that m x m matrix).
//!
//! The sums over patches are the heavy part and run in [`Stages`]: [`crate::cpu::train`]
//! (f64 sums of the CPU codec's f32 mode products) or [`crate::gpu::train`] (the engine's
//! batched GEMM); the m x m SVDs run on the host in f64 either way. Dictionaries are independent of each other, so one
//! stage call serves all K of them. Deterministic for a seed: the random split uses
//! ChaCha8, and every sum is reduced in a fixed order.

pub mod cluster;

use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;

use kit::stats::ms_since;

use crate::codes::{Codes, Limit, Params};
use crate::cpu::encode::encode_patches_cpu;
use crate::dictionary::{mode_offsets, Ensemble};
use crate::error::{LfError, Result};
use crate::gpu::GpuCodec;
use crate::lightfield::LightField;
use crate::linalg::{polar, svd, Mat};
use crate::patch::{PatchGrid, PatchShape, MODES};
use crate::stages::{Clusters, SlotCodes, Stages};

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
    /// Initial shares from k-means clusters of the patches instead of a random split.
    pub precluster: bool,
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

/// Where the training time went (wall clock, ms).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct TrainTimes {
    /// Gathering patches, uploading them, pre-clustering, the initial HOSVD dictionaries.
    pub init_ms: f64,
    /// Pre-clustering alone (part of `init_ms`).
    pub precluster_ms: f64,
    /// All assignment steps (the encoder).
    pub assign_ms: f64,
    /// All update steps (Gram sums and SVDs).
    pub update_ms: f64,
    /// The whole training.
    pub total_ms: f64,
}

/// Where the assignment step and the update sums run.
pub enum TrainDevice<'a> {
    Cpu,
    Gpu(&'a engine::Context),
}

/// The stages of `device` for patch-major `patches`.
pub fn stages<'a>(device: &TrainDevice<'_>, shape: PatchShape, patches: &'a [f32]) -> Result<Box<dyn Stages + 'a>> {
    Ok(match device {
        TrainDevice::Cpu => Box::new(crate::cpu::train::CpuStages::new(shape, patches)),
        TrainDevice::Gpu(ctx) => Box::new(crate::gpu::train::GpuStages::new(ctx, shape, patches)?),
    })
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

/// Stores `m` as the mode-`n` matrix of dictionary `k`.
fn set_matrix(ens: &mut Ensemble, k: usize, n: usize, m: &Mat) {
    let (offsets, dlen) = mode_offsets(ens.shape);
    let start = k * dlen + offsets[n];
    ens.mats[start..start + m.a.len()].iter_mut().zip(&m.a).for_each(|(d, &x)| *d = x as f32);
}

/// The initial shares: a random split of the patches into K (near-)equal parts.
fn random_split(n: usize, opts: &TrainOptions) -> Vec<u32> {
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(opts.seed));
    let mut membership = vec![0; n];
    order.iter().enumerate().for_each(|(i, &p)| membership[p] = (i % opts.k) as u32);
    membership
}

/// Initial ensemble: dictionary k is the HOSVD basis of share k (random where it is empty).
fn initial_ensemble(stages: &mut dyn Stages, clusters: &Clusters, opts: &TrainOptions) -> Result<Ensemble> {
    stages.load(clusters, None)?;
    let mut ens = Ensemble::random(opts.shape, opts.k, opts.seed);
    for n in 0..MODES {
        for (k, gram) in stages.grams(n)?.iter().enumerate() {
            if !clusters.slots(k).is_empty() {
                set_matrix(&mut ens, k, n, &svd(gram).u);
            }
        }
    }
    Ok(ens)
}

/// One Procrustes sweep over the modes of every dictionary, for the patches assigned to it.
fn update(stages: &mut dyn Stages, ens: &mut Ensemble, codes: &Codes, step: f32) -> Result<()> {
    let clusters = Clusters::from_membership(&codes.membership, ens.k);
    stages.load(&clusters, Some(&SlotCodes::new(&clusters, codes, step)))?;
    for n in 0..MODES {
        for (k, cross) in stages.crosses(ens, n)?.iter().enumerate() {
            // An empty cluster, or one whose coefficients vanish, keeps its matrix.
            if !cross.a.iter().all(|&x| x.abs() < 1e-12) {
                set_matrix(ens, k, n, &polar(cross));
            }
        }
    }
    Ok(())
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

/// Statistics of an assignment. The PSNR comes from the encoder's per-patch squared errors:
/// the dictionaries are orthonormal, so that error is the reconstruction error (up to f32
/// rounding) and no decode is needed.
fn stats(iteration: usize, plen: usize, codes: &Codes) -> IterationStats {
    let n = codes.len().max(1);
    let squared: f64 = codes.errors.iter().map(|&e| e.max(0.0) as f64).sum();
    IterationStats {
        iteration,
        mean_coefficients: codes.locations.len() as f64 / n as f64,
        success_fraction: codes.success.iter().filter(|&&s| s).count() as f64 / n as f64,
        psnr_db: -10.0 * (squared / (n * plen) as f64).log10(),
    }
}

/// Trains an ensemble on `lfs`; `progress` sees each iteration's statistics.
pub fn train(
    lfs: &[LightField],
    opts: &TrainOptions,
    device: TrainDevice<'_>,
    mut progress: impl FnMut(&IterationStats),
) -> Result<(Ensemble, TrainTimes)> {
    opts.shape.check()?;
    opts.params.check(opts.shape.len())?;
    if opts.k == 0 || opts.k > crate::dictionary::MAX_DICTIONARIES {
        return Err(LfError::Dictionaries { k: opts.k, max: crate::dictionary::MAX_DICTIONARIES });
    }
    if lfs.is_empty() {
        return Err(LfError::NoTrainingData);
    }
    let t0 = Instant::now();
    let mut times = TrainTimes::default();
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
    let mut stages = stages(&device, opts.shape, &patches)?;
    let membership = if opts.precluster {
        let tc = Instant::now();
        let m = cluster::precluster(stages.as_mut(), &patches, opts)?;
        times.precluster_ms = ms_since(tc);
        m
    } else {
        random_split(n, opts)
    };
    let mut ens = initial_ensemble(stages.as_mut(), &Clusters::from_membership(&membership, opts.k), opts)?;
    times.init_ms = ms_since(t0);
    for iteration in 0..=opts.iterations {
        let ta = Instant::now();
        let codes = assign(&patches, &limits, &ens, opts.params, &device)?;
        times.assign_ms += ms_since(ta);
        progress(&stats(iteration, plen, &codes));
        if iteration < opts.iterations {
            let tu = Instant::now();
            update(stages.as_mut(), &mut ens, &codes, step)?;
            times.update_ms += ms_since(tu);
        }
    }
    ens.validate()?;
    times.total_ms = ms_since(t0);
    Ok((ens, times))
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
            ..small_options()
        };
        let mut psnr = Vec::new();
        let (a, _) = train(&lfs, &opts, TrainDevice::Cpu, |s| psnr.push(s.psnr_db)).unwrap();
        let (b, _) = train(&lfs, &opts, TrainDevice::Cpu, |_| {}).unwrap();
        assert_eq!(a, b);
        a.validate().unwrap();
        assert_eq!(psnr.len(), 3);
        assert!(psnr[2] >= psnr[0] - 0.1, "training made the fit worse: {psnr:?}");
        let (other, _) = train(&lfs, &TrainOptions { seed: 10, ..opts }, TrainDevice::Cpu, |_| {}).unwrap();
        assert_ne!(a, other);
    }

    fn small_options() -> TrainOptions {
        TrainOptions {
            k: 3,
            shape: PatchShape { my: 5, mx: 3, mu: 3, mv: 4 },
            iterations: 1,
            params: Params { sparsity: 90, epsilon: 0.02 },
            seed: 4,
            max_patches: 1000,
            precluster: false,
        }
    }

    /// PSNR of a light field encoded (CPU reference) with `ens` and decoded.
    fn encode_psnr(lf: &LightField, ens: &Ensemble) -> f64 {
        use crate::codec::{decode_lightfield, encode_lightfield, CodecPath};
        let params = Params { sparsity: 90, epsilon: 0.02 };
        let (compressed, _) = encode_lightfield(lf, ens, params, CodecPath::Cpu).unwrap();
        let (decoded, _) = decode_lightfield(&compressed, CodecPath::Cpu).unwrap();
        crate::lightfield::psnr(&lf.data, &decoded.data)
    }

    /// Training on the GPU (assignment and update sums) against the CPU twin. The update
    /// sums agree to ~1e-5 (see `gpu::tests`), but assignment ties may break differently,
    /// so the dictionaries are compared by what they do: the PSNR of another light field
    /// encoded with them, within 0.1 dB.
    #[test]
    fn gpu_training_encodes_as_well_as_cpu_training() {
        let ctx = engine::testing::context();
        let lfs = [crate::synth::generate((3, 4), (15, 20), 41)];
        let test = crate::synth::generate((3, 4), (15, 20), 42);
        for precluster in [false, true] {
            let opts = TrainOptions { precluster, ..small_options() };
            let (cpu, _) = train(&lfs, &opts, TrainDevice::Cpu, |_| {}).unwrap();
            let (gpu, _) = train(&lfs, &opts, TrainDevice::Gpu(ctx), |_| {}).unwrap();
            gpu.validate().unwrap();
            let (a, b) = (encode_psnr(&test, &cpu), encode_psnr(&test, &gpu));
            eprintln!("precluster {precluster}: CPU-trained {a:.3} dB, GPU-trained {b:.3} dB");
            assert!((a - b).abs() < 0.1, "precluster {precluster}: CPU-trained {a:.3} dB, GPU-trained {b:.3} dB");
        }
        engine::testing::assert_no_validation_messages();
    }
}
