//! `composite sweep`: the GPU encoder's shapes (`gpu::encode::EncodeConfig`) on rendered
//! frames, for occupancy tuning.
//!
//! For each size and each of two ranks' shares (a dense one, as 6 ranks split the scene,
//! and a sparse one, as 192 do) every shape encodes the same frame; its payload is checked
//! byte for byte against the CPU encoder, and the median GPU times of its two kernels are
//! reported next to their copy-bandwidth floors, with the driver's register counts where
//! the device reports them. The repetitions are interleaved (every shape once per round), so
//! that a drift of the GPU's clocks hits all shapes alike. One JSON object per line; the
//! last line names the fastest verified shape.

use engine::Context;
use serde_json::json;

use kit::stats::median;

use crate::bench::{floor_ms, FrameSource};
use crate::cpu::encode::{encode_parallel, roi};
use crate::error::{CompositeError, Result};
use crate::gpu::encode::{EncodeConfig, GpuEncoder};
use crate::scene::Scene;

/// Every shape the sweep tries that fits the device's workgroups.
pub fn configs(max_workgroup: u32) -> Vec<EncodeConfig> {
    let mut out = Vec::new();
    for workgroup in [128, 256, 512, 1024] {
        for per_lane in [32, 64] {
            for batch in [4, 8, 16] {
                if workgroup <= max_workgroup {
                    out.push(EncodeConfig { workgroup, per_lane, batch });
                }
            }
        }
    }
    out
}

/// Where a payload differs from the reference: the first differing word with the words
/// around it in both, the number of differing words and both lengths.
fn mismatch(want: &[u32], got: &[u32]) -> serde_json::Value {
    let first = want.iter().zip(got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
    let window = |v: &[u32]| v[first.saturating_sub(6)..(first + 6).min(v.len())].to_vec();
    let differing = want.iter().zip(got).filter(|(a, b)| a != b).count();
    json!({"first": first, "differing_words": differing, "want_len": want.len(), "got_len": got.len(),
        "want": window(want), "got": window(got)})
}

/// The register counts of an encoder's two kernels, where the driver reports them.
fn registers(encoder: &GpuEncoder) -> Result<Vec<Option<String>>> {
    Ok(encoder
        .kernel_statistics()?
        .into_iter()
        .map(|stats| stats.into_iter().find(|(name, _)| name.to_lowercase().contains("register")).map(|(_, v)| v))
        .collect())
}

/// Runs the sweep and hands each JSON line to `emit`.
pub fn run(ctx: &Context, quick: bool, mut emit: impl FnMut(serde_json::Value)) -> Result<()> {
    let sizes: &[(&str, u32, u32)] =
        if quick { &[("tiny", 97, 61)] } else { &[("4K", 3840, 2160), ("8K", 7680, 4320)] };
    let shares: [(usize, usize); 2] = if quick { [(1, 2), (1, 3)] } else { [(3, 6), (96, 192)] };
    let points = if quick { 3000 } else { 4_000_000 };
    let reps = if quick { 2 } else { 21 };
    let scene = Scene::points(points, 7)?;
    let configs = configs(ctx.info().max_workgroup_invocations);
    let copy_gb_per_s = engine::ceilings::copy_gb_per_s(ctx)?;
    emit(json!({"sweep": "setup", "device": ctx.info().name, "scene": format!("points:{points}:7"),
        "configs": configs.len(), "reps": reps, "copy_gb_per_s": copy_gb_per_s}));
    // Pipelines are built once; a shape the device cannot build is reported once.
    let mut encoders = Vec::new();
    for config in configs {
        match GpuEncoder::with_config(ctx, config) {
            Ok(e) => encoders.push(e),
            Err(e) => emit(json!({"sweep": "config", "config": config, "error": e.to_string()})),
        }
    }
    // Per encoder: total median time of both kernels over all frames, and whether every
    // payload was right.
    let mut totals = vec![(0.0f64, true); encoders.len()];
    for &(size, width, height) in sizes {
        let frames = FrameSource::new(ctx, &scene, width, height)?;
        let (color, depth) = (&frames.raster.color, &frames.raster.depth);
        for (rank, ranks) in shares {
            frames.render(rank, ranks)?;
            let frame = frames.read_back()?;
            let want = encode_parallel(&frame);
            let roi = roi(&frame.depth, width);
            let floor = floor_ms(roi.map_or(0, |r| r.pixels()), &want, copy_gb_per_s);
            let pipeline_floor = floor_ms(frame.pixels(), &want, copy_gb_per_s);
            // A shape whose kernel reports a corrupt payload size is wrong, and the sweep goes
            // on with the others.
            let mut got = Vec::new();
            for encoder in encoders.iter_mut() {
                got.push(match encoder.encode(color, depth, width, height) {
                    Ok((encoded, _, _)) => Some(encoded),
                    Err(CompositeError::PayloadSize { .. }) => None,
                    Err(e) => return Err(e),
                });
            }
            engine::ceilings::warm_up(ctx, std::time::Duration::from_millis(600))?;
            let mut times = vec![(Vec::new(), Vec::new()); encoders.len()];
            for _ in 0..reps {
                for ((encoder, slot), got) in encoders.iter_mut().zip(&mut times).zip(&got) {
                    if got.is_some() {
                        let t = encoder.encode_on_device(color, depth, width, height)?.2;
                        slot.0.push(t.roi_ms);
                        slot.1.push(t.encode_ms);
                    }
                }
            }
            for (((encoder, (roi_ms, encode_ms)), got), total) in encoders.iter().zip(times).zip(got).zip(&mut totals) {
                let config = encoder.config();
                let verified = got.as_ref() == Some(&want);
                if got.is_none() {
                    emit(json!({"sweep": "encode", "size": size, "rank": rank, "ranks": ranks, "config": config,
                        "verified": false, "error": "corrupt payload size"}));
                    total.1 = false;
                    continue;
                }
                let (roi_ms, encode_ms) = (median(&roi_ms), median(&encode_ms));
                emit(json!({"sweep": "encode", "size": size, "rank": rank, "ranks": ranks, "config": config,
                    "roi_ms": roi_ms, "encode_ms": encode_ms, "floor_ms": floor, "floor_fraction": floor / encode_ms,
                    "pipeline_ms": roi_ms + encode_ms, "pipeline_floor_ms": pipeline_floor,
                    "pipeline_floor_fraction": pipeline_floor / (roi_ms + encode_ms), "verified": verified,
                    "registers": registers(encoder)?, "active_pixels": want.active_pixels(),
                    "mismatch": (!verified).then(|| mismatch(&want.words, &got.unwrap().words))}));
                *total = (total.0 + roi_ms + encode_ms, total.1 && verified);
            }
        }
    }
    let best = encoders
        .iter()
        .zip(&totals)
        .filter(|(_, t)| t.1)
        .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0))
        .map(|(e, t)| json!({"config": e.config(), "total_ms": t.0}));
    let wrong: Vec<EncodeConfig> =
        encoders.iter().zip(&totals).filter(|(_, t)| !t.1).map(|(e, _)| e.config()).collect();
    emit(json!({"sweep": "best", "best": best, "wrong_payloads": wrong}));
    Ok(())
}
