//! Training measurements of `lightfield bench`: whole trainings of 3,200 and 32,000 patches
//! (paper patch, K = 64) on the CPU and the GPU, with and without pre-clustering, and the
//! analysis mode products of a batch of patches on the CPU (`dictionary::mode_products`)
//! against the engine's `ModeProduct` chain on the GPU.

use std::time::Instant;

use engine::prims::gemm::{Gemm, ModeProduct};
use engine::{Context, Location};
use rayon::prelude::*;
use serde_json::json;

use crate::codes::Params;
use crate::dictionary::{mode_offsets, mode_products, Ensemble};
use crate::error::Result;
use crate::patch::{PatchGrid, PatchShape, MODES};
use crate::synth::generate;
use crate::train::{train, TrainDevice, TrainOptions};

/// Training light fields holding at least `count` patches of `shape` (two scenes).
fn scenes(shape: PatchShape, views: (usize, usize), count: usize) -> Vec<crate::lightfield::LightField> {
    let blocks = views.0.div_ceil(shape.mu) * views.1.div_ceil(shape.mv);
    let side = ((count.div_ceil(2 * blocks)) as f64).sqrt().ceil() as usize;
    (0..2).map(|i| generate(views, (side * shape.mx, side * shape.my), 101 + i)).collect()
}

/// One `train` line per patch count, backend and initial split.
pub fn trainings(
    ctx: &Context,
    s: &super::Sizes,
    device_name: &str,
    emit: &mut impl FnMut(serde_json::Value),
) -> Result<()> {
    let (shape, k) = (s.shape, s.k);
    for &count in s.train_counts {
        let lfs = scenes(shape, s.views, count);
        let available: usize = lfs.iter().map(|lf| PatchGrid::new(shape, lf.u, lf.v, lf.h, lf.w).len()).sum();
        for (backend, precluster) in [("gpu", false), ("gpu", true), ("cpu", false)] {
            // The CPU encoder is the assignment step: at 32,000 patches one iteration shows
            // the per-step times without minutes of waiting.
            let iterations = if backend == "cpu" && count > 10_000 { 1 } else { s.train_iterations };
            let opts = TrainOptions {
                k,
                shape,
                iterations,
                params: Params { sparsity: shape.len() / 8, epsilon: super::PAPER_EPSILON },
                seed: 1,
                max_patches: count,
                precluster,
            };
            let device = if backend == "gpu" { TrainDevice::Gpu(ctx) } else { TrainDevice::Cpu };
            let mut last = None;
            let (_, times) = train(&lfs, &opts, device, |st| last = Some(st.clone()))?;
            emit(json!({
                "bench": "train", "device": device_name, "backend": backend, "precluster": precluster,
                "k": k, "patch": shape.to_string(), "training_patches": count.min(available),
                "iterations": iterations, "train_ms": times.total_ms, "init_ms": times.init_ms,
                "precluster_ms": times.precluster_ms, "assign_ms": times.assign_ms, "update_ms": times.update_ms,
                "update_ms_per_iteration": times.update_ms / iterations.max(1) as f64,
                "assign_ms_per_step": times.assign_ms / (iterations + 1) as f64,
                "final": last,
            }));
        }
    }
    Ok(())
}

/// Analysis of `count` patches with one dictionary: CPU `mode_products` (rayon) against the
/// engine's five `ModeProduct`s on the GPU (data resident, wall of the submit, median of 3).
pub fn mode_products_line(
    ctx: &Context,
    shape: PatchShape,
    count: usize,
    device_name: &str,
    emit: &mut impl FnMut(serde_json::Value),
) -> Result<()> {
    let plen = shape.len();
    let ens = Ensemble::random(shape, 1, 5);
    let patches: Vec<f32> = (0..count * plen).map(|i| ((i * 7919) % 1000) as f32 / 1000.0).collect();
    let mut cpu = patches.clone();
    let t = Instant::now();
    cpu.par_chunks_mut(plen).for_each(|p| mode_products(p, shape, ens.dictionary(0), true));
    let cpu_ms = t.elapsed().as_secs_f64() * 1e3;

    let gemm = Gemm::new(ctx)?;
    let dict = ctx.upload(&ens.mats, "dictionary")?;
    let input = ctx.upload(&patches, "patches")?;
    let bufs = [
        ctx.buffer::<f32>(patches.len(), Location::Device, "products")?,
        ctx.buffer::<f32>(patches.len(), Location::Device, "products")?,
    ];
    let (offsets, _) = mode_offsets(shape);
    let modes = shape.modes();
    let run = || -> Result<f64> {
        let mut rec = ctx.recorder()?;
        for mode in 0..MODES {
            let product =
                ModeProduct { dims: modes.to_vec(), mode, batch: count, u_rows: modes[mode], transpose_u: true };
            let src = if mode == 0 { &input } else { &bufs[1 - mode % 2] };
            gemm.record_mode_product_at(&mut rec, &product, (src, 0), (&dict, offsets[mode]), (&bufs[mode % 2], 0))?;
        }
        let t = Instant::now();
        rec.submit()?.wait()?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    };
    run()?;
    let mut runs = [run()?, run()?, run()?];
    runs.sort_by(f64::total_cmp);
    // The input stays untouched; mode m writes buffer m % 2, so the last (4) is in buffer 0.
    let gpu = ctx.download(&bufs[0])?;
    let scale = cpu.iter().fold(0f32, |m, x| m.max(x.abs())) as f64;
    let worst = gpu.iter().zip(&cpu).fold(0f64, |m, (a, b)| m.max((a - b).abs() as f64)) / scale.max(1e-30);
    emit(json!({
        "bench": "mode_products", "device": device_name, "patch": shape.to_string(), "patches": count,
        "cpu_ms": cpu_ms, "cpu_threads": rayon::current_num_threads(), "gpu_wall_ms": runs[1],
        "max_difference_relative": worst,
        "note": "analysis (5 mode products, one dictionary): dictionary::mode_products on the CPU vs the engine's ModeProduct on the GPU, data resident",
    }));
    Ok(())
}
