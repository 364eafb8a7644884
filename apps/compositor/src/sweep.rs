//! `composite sweep`: the encoding kernel's configurations (tile shape, descriptor loads,
//! colour loads; `gpu_encode::EncodeConfig`) on rendered frames, for occupancy tuning.
//!
//! For each size and each of two ranks' shares (a dense one, as 6 ranks split the scene,
//! and a sparse one, as 192 do) every configuration encodes the same frame; its payload is
//! checked byte for byte against the CPU encoder and its median GPU time is reported next
//! to the copy-bandwidth floor, with the driver's register count where the device reports
//! it. One JSON object per line; the last line names the fastest verified configuration.

use engine::Context;
use serde_json::json;

use crate::bench::{floor_ms, median, FrameSource};
use crate::error::{CompositorError, Result};
use crate::gpu_encode::{EncodeConfig, GpuEncoder};
use crate::scene::Scene;

/// Every configuration the sweep tries: all tile shapes of up to 16 elements per
/// invocation that fit a 1024-invocation workgroup, with each code-path choice.
pub fn configs(max_workgroup: u32) -> Vec<EncodeConfig> {
    let shapes = [(128, 16), (256, 8), (256, 16), (512, 4), (512, 8), (512, 16), (1024, 4), (1024, 8), (1024, 16)];
    let mut out = Vec::new();
    for (workgroup, per_invocation) in shapes {
        if workgroup > max_workgroup {
            continue;
        }
        for relaxed_loads in [false, true] {
            for late_colour in [false, true] {
                out.push(EncodeConfig { workgroup, per_invocation, relaxed_loads, late_colour });
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

/// Runs the sweep and hands each JSON line to `emit`.
pub fn run(device: Option<&str>, quick: bool, mut emit: impl FnMut(serde_json::Value)) -> Result<()> {
    let ctx = Context::open(device)?;
    let sizes: &[(&str, u32, u32)] =
        if quick { &[("tiny", 97, 61)] } else { &[("4K", 3840, 2160), ("8K", 7680, 4320)] };
    let shares: [(usize, usize); 2] = if quick { [(1, 2), (1, 3)] } else { [(3, 6), (96, 192)] };
    let points = if quick { 3000 } else { 4_000_000 };
    let reps = if quick { 2 } else { 15 };
    let scene = Scene::points(points, 7);
    let configs = configs(ctx.info().max_workgroup_invocations);
    emit(json!({"sweep": "setup", "device": ctx.info().name, "scene": format!("points:{points}:7"),
        "configs": configs.len(), "reps": reps}));
    // Pipelines are built once; a configuration the device cannot build is reported once.
    let mut encoders = Vec::new();
    for config in configs {
        match GpuEncoder::with_config(&ctx, config) {
            Ok(e) => encoders.push(e),
            Err(e) => emit(json!({"sweep": "config", "config": config, "error": e.to_string()})),
        }
    }
    // Per encoder: total median time over all frames, and whether every payload was right.
    let mut totals = vec![(0.0f64, true); encoders.len()];
    for &(size, width, height) in sizes {
        let frames = FrameSource::new(&ctx, &scene, width, height)?;
        let raster = &frames.raster;
        // The configurations are ranked by their total time over every frame.
        for (rank, ranks) in shares {
            frames.render(rank, ranks)?;
            let frame = frames.read_back()?;
            let want = crate::codec::encode_parallel(&frame);
            let roi = crate::gpu_encode::roi_cpu(&frame.depth, width);
            let floor = floor_ms(roi.map_or(0, |r| r.elements(width)), &want);
            for (encoder, total) in encoders.iter_mut().zip(&mut totals) {
                let config = encoder.config();
                // A configuration whose kernel reports a corrupt payload size is wrong, and the
                // sweep goes on with the others.
                let got = match encoder.encode(&raster.color, &raster.depth, width, height) {
                    Ok((got, _, _)) => got,
                    Err(CompositorError::Corrupt(e)) => {
                        emit(json!({"sweep": "encode", "size": size, "rank": rank, "ranks": ranks,
                            "config": config, "verified": false, "error": e}));
                        total.1 = false;
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                engine::ceilings::warm_up(&ctx, std::time::Duration::from_millis(100))?;
                let mut times = Vec::new();
                for _ in 0..reps {
                    times.push(encoder.encode(&raster.color, &raster.depth, width, height)?.2.encode_ms);
                }
                let ms = median(times);
                let verified = got == want;
                let registers = encoder
                    .kernel_statistics()?
                    .into_iter()
                    .find(|(name, _)| name.to_lowercase().contains("register"))
                    .map(|(_, v)| v);
                emit(json!({"sweep": "encode", "size": size, "rank": rank, "ranks": ranks, "config": config,
                    "encode_ms": ms, "floor_ms": floor, "floor_fraction": floor / ms, "verified": verified,
                    "registers": registers, "active_pixels": want.active_pixels(),
                    "mismatch": (!verified).then(|| mismatch(&want.words, &got.words))}));
                *total = (total.0 + ms, total.1 && verified);
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
