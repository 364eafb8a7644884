//! `composite sweep`: the encoding kernel's configurations (tile shape, descriptor loads,
//! colour loads; `gpu_encode::EncodeConfig`) on rendered frames, for occupancy tuning.
//!
//! For each size and each of two ranks' shares (a dense one, as 6 ranks split the scene,
//! and a sparse one, as 192 do) every configuration encodes the same frame; its payload is
//! checked byte for byte against the CPU encoder and its median GPU time is reported next
//! to the copy-bandwidth floor, with the driver's register count where the device reports
//! it. One JSON object per line; the last line names the fastest verified configuration.
//!
//! With `--trace` each configuration (relaxed loads, early colours) runs the traced kernel
//! (`ap_encode_trace.comp`), which records every tile's steps with the GPU's own clocks, and
//! a `trace` line per frame adds a summary (where the tiles' time goes, how many run at
//! once) and every tile's timeline: the profile the GPU machines have no profiler for.

use engine::Context;
use serde_json::json;

use crate::bench::{floor_ms, median, FrameSource};
use crate::error::{CompositorError, Result};
use crate::gpu_encode::{EncodeConfig, GpuEncoder, TileTrace};
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
pub fn run(device: Option<&str>, quick: bool, trace: bool, mut emit: impl FnMut(serde_json::Value)) -> Result<()> {
    let ctx = Context::open(device)?;
    if trace && !ctx.has_kernel_clocks() {
        return Err(CompositorError::Invalid(format!(
            "--trace needs VK_KHR_shader_clock and VK_NV_shader_sm_builtins, which {} lacks",
            ctx.info().name
        )));
    }
    let sizes: &[(&str, u32, u32)] =
        if quick { &[("tiny", 97, 61)] } else { &[("4K", 3840, 2160), ("8K", 7680, 4320)] };
    let shares: [(usize, usize); 2] = if quick { [(1, 2), (1, 3)] } else { [(3, 6), (96, 192)] };
    let points = if quick { 3000 } else { 4_000_000 };
    let reps = if quick { 2 } else { 15 };
    let scene = Scene::points(points, 7);
    let mut configs = configs(ctx.info().max_workgroup_invocations);
    if trace {
        configs.retain(|c| c.relaxed_loads && !c.late_colour);
    }
    emit(json!({"sweep": "setup", "device": ctx.info().name, "scene": format!("points:{points}:7"),
        "configs": configs.len(), "reps": reps}));
    // Pipelines are built once; a configuration the device cannot build is reported once.
    let mut encoders = Vec::new();
    for config in configs {
        let encoder = if trace { GpuEncoder::traced(&ctx, config) } else { GpuEncoder::with_config(&ctx, config) };
        match encoder {
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
                let mut corrupt = false;
                for _ in 0..reps {
                    match encoder.encode(&raster.color, &raster.depth, width, height) {
                        Ok((_, _, t)) => times.push(t.encode_ms),
                        // A later encoding of a kernel that is wrong anyway can report a
                        // corrupt size too.
                        Err(CompositorError::Corrupt(_)) => corrupt = true,
                        Err(e) => return Err(e),
                    }
                }
                let ms = median(times);
                let verified = got == want && !corrupt;
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
                if trace {
                    let tiles = roi.map_or(0, |r| r.elements(width)).div_ceil(config.tile());
                    let tiles = encoder.trace(tiles)?;
                    emit(json!({"sweep": "trace", "size": size, "rank": rank, "ranks": ranks, "config": config,
                        "encode_ms": ms, "verified": verified, "summary": trace_summary(&tiles),
                        "statistics": encoder.kernel_statistics()?,
                        "tiles": tiles}));
                }
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

/// The chunked encoder's shapes against the look-back encoder's default, on the same frames:
/// pass 1 replaces the ROI kernel, so both times are reported.
pub fn run_chunked(device: Option<&str>, quick: bool, mut emit: impl FnMut(serde_json::Value)) -> Result<()> {
    use crate::gpu_chunks::{ChunkConfig, ChunkEncoder};
    let ctx = Context::open(device)?;
    let sizes: &[(&str, u32, u32)] =
        if quick { &[("tiny", 97, 61)] } else { &[("4K", 3840, 2160), ("8K", 7680, 4320)] };
    let shares: [(usize, usize); 2] = if quick { [(1, 2), (1, 3)] } else { [(3, 6), (96, 192)] };
    let points = if quick { 3000 } else { 4_000_000 };
    let reps = if quick { 2 } else { 21 };
    let scene = Scene::points(points, 7);
    let mut old = GpuEncoder::new(&ctx)?;
    let mut chunked = Vec::new();
    for (workgroup, per_lane, batch) in [
        (512, 32, 8),
        (256, 32, 8),
        (1024, 32, 8),
        (512, 64, 8),
        (256, 64, 8),
        (1024, 64, 8),
        (512, 32, 4),
        (512, 128, 8),
    ] {
        match ChunkEncoder::with_config(&ctx, ChunkConfig { workgroup, per_lane, reverse: false, batch }) {
            Ok(e) => chunked.push(e),
            Err(e) => {
                emit(json!({"sweep": "chunked", "workgroup": workgroup, "per_lane": per_lane, "error": e.to_string()}))
            }
        }
    }
    for &(size, width, height) in sizes {
        let frames = FrameSource::new(&ctx, &scene, width, height)?;
        let (color, depth) = (&frames.raster.color, &frames.raster.depth);
        for (rank, ranks) in shares {
            frames.render(rank, ranks)?;
            let frame = frames.read_back()?;
            let want = crate::codec::encode_parallel(&frame);
            let roi = crate::gpu_encode::roi_cpu(&frame.depth, width);
            let floor = floor_ms(roi.map_or(0, |r| r.elements(width)), &want);
            let mut ok = vec![old.encode(color, depth, width, height)?.0 == want];
            for enc in chunked.iter_mut() {
                let words = enc.encode_image(color, depth, width, height, 0)?.0;
                ok.push(enc.download(words)?.0 == want.words);
            }
            engine::ceilings::warm_up(&ctx, std::time::Duration::from_millis(600))?;
            // Interleaved repetitions: every encoder once per round, so drifts hit all alike.
            let mut times = vec![(Vec::new(), Vec::new(), Vec::new()); chunked.len() + 1];
            for _ in 0..reps {
                let t = old.encode_on_device(color, depth, width, height)?.2;
                times[0].0.push(t.roi_ms);
                times[0].1.push(t.encode_ms);
                for (enc, slot) in chunked.iter_mut().zip(&mut times[1..]) {
                    let t = enc.encode_image(color, depth, width, height, 0)?.2;
                    slot.0.push(t.roi_ms);
                    slot.1.push(t.encode_ms);
                }
            }
            for (i, (r, e, s)) in times.into_iter().enumerate() {
                let (roi_ms, encode_ms) = (median(r), median(e));
                let kernel = if i == 0 { json!("lookback 1024x16") } else { json!(chunked[i - 1].config()) };
                emit(json!({"sweep": "chunked", "size": size, "rank": rank, "kernel": kernel, "verified": ok[i],
                    "roi_ms": roi_ms, "encode_ms": encode_ms, "scan_ms": if s.is_empty() { 0.0 } else { median(s) },
                    "total_ms": roi_ms + encode_ms, "floor_ms": floor, "floor_fraction": floor / encode_ms}));
            }
        }
    }
    for enc in &chunked {
        let stats = enc.kernel_statistics()?;
        emit(json!({"sweep": "chunked-statistics", "kernel": enc.config(), "statistics": stats}));
    }
    Ok(())
}

/// Where a traced encoding's time went: its span from the first tile's start to the last
/// one's end, how many tiles ran at once on average (per SM, too), and the mean time of each
/// of a tile's steps, from the SM clock cycles converted at the rate the device clock shows.
fn trace_summary(tiles: &[TileTrace]) -> serde_json::Value {
    if tiles.is_empty() {
        return json!(null);
    }
    // Device clock times relative to the first start (the low words wrap every 4.3 s).
    let t0 = tiles.iter().map(|t| t.start_ns).min_by_key(|&s| s.wrapping_sub(tiles[0].start_ns) as i32).unwrap();
    let rel = |ns: u32| ns.wrapping_sub(t0) as f64;
    let span_ns = tiles.iter().map(|t| rel(t.end_ns)).fold(0.0, f64::max);
    let life_ns: f64 = tiles.iter().map(|t| rel(t.end_ns) - rel(t.start_ns)).sum();
    let cycles: f64 = tiles.iter().map(|t| t.cycles[4] as f64).sum();
    let ns_per_cycle = life_ns / cycles.max(1.0);
    let n = tiles.len() as f64;
    let sms = tiles.iter().map(|t| t.sm).max().unwrap_or(0) + 1;
    // Mean time from one step's end to the next's, in us.
    let step = |i: usize| {
        let sum: f64 =
            tiles.iter().map(|t| t.cycles[i] as f64 - if i == 0 { 0.0 } else { t.cycles[i - 1] as f64 }).sum();
        sum / n * ns_per_cycle / 1e3
    };
    json!({"tiles": tiles.len(), "span_us": span_ns / 1e3, "mean_tile_us": life_ns / n / 1e3,
        "tiles_at_once": life_ns / span_ns.max(1.0), "sms": sms,
        "tiles_at_once_per_sm": life_ns / span_ns.max(1.0) / sms as f64,
        "ghz": 1.0 / ns_per_cycle.max(1e-9),
        "windows_mean": tiles.iter().map(|t| t.windows as f64).sum::<f64>() / n,
        "steps_us": {"ticket": step(0), "depth_loads": step(1), "tile_scan": step(2),
            "look_back": step(3), "scatter": step(4)}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile(start_ns: u32, end_ns: u32, sm: u32, cycles: [u32; 5]) -> TileTrace {
        TileTrace { start_ns, end_ns, sm, windows: 2, cycles }
    }

    #[test]
    fn trace_summary_measures_span_overlap_and_steps() {
        // Two SMs at 2 GHz (2 cycles a ns); the device clock wraps between the tiles.
        let t0 = u32::MAX - 999;
        let tiles = [
            tile(t0, t0.wrapping_add(4000), 0, [1000, 2000, 3000, 5000, 8000]),
            tile(t0.wrapping_add(2000), t0.wrapping_add(6000), 0, [1000, 2000, 3000, 5000, 8000]),
            tile(t0.wrapping_add(1000), t0.wrapping_add(5000), 1, [1000, 2000, 3000, 5000, 8000]),
        ];
        let s = trace_summary(&tiles);
        let close = |key: &str, want: f64| {
            let got = s.pointer(key).and_then(|v| v.as_f64()).unwrap();
            assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "{key}: {got} against {want}");
        };
        close("/span_us", 6.0);
        close("/mean_tile_us", 4.0);
        close("/tiles_at_once", 2.0);
        close("/tiles_at_once_per_sm", 1.0);
        close("/ghz", 2.0);
        close("/windows_mean", 2.0);
        close("/steps_us/ticket", 0.5);
        close("/steps_us/look_back", 1.0);
        close("/steps_us/scatter", 1.5);
        assert_eq!(trace_summary(&[]), json!(null));
    }
}
