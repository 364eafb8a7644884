//! `composite bench`: the paper's Tables 1 and 2 on a generated GPS-like point cloud.
//!
//! For HD, 4K and 8K and two scales (6 and 192 ranks, as the paper's GPS runs) one rank's
//! share is rendered and its image leaves the GPU three ways: the raw full frame (IceT's
//! generic interface), the raw region of interest (its OpenGL 3 interface, then encoded on
//! the CPU), and GPU Active Pixel encoding with only the payload copied (the paper's
//! method). Device-to-host bytes and GPU times of each, the serial CPU encoder's time (the
//! paper's CPU compression) and the multithreaded one, and the copy-bandwidth floor of the
//! GPU encoder are printed as one JSON object per line. Then, over every rank of each
//! scale, the min and max ROI and AP data sizes relative to the raw frame (Table 2).

use engine::{Buffer, Context, Location};
use glam::Mat4;
use kit::stats::median;
use serde_json::json;

use crate::cpu::encode::{encode_parallel, encode_roi, encode_serial};
use crate::error::Result;
use crate::frame::Frame;
use crate::gpu::encode::GpuEncoder;
use crate::raster::Rasteriser;
use crate::scene::Scene;
use crate::timing::{time_ms, timed_pass};
use crate::types::Roi;

/// The copy-bandwidth floor of encoding the `box_pixels` pixels of a frame's ROI box into
/// `encoded`, in ms: the depth of every pixel in the box read, the colour of every active
/// pixel read, the payload written. With the whole frame as the box, the floor of ROI
/// detection and encoding together (every input byte read once). At `copy_gb_per_s`, the
/// device's measured copy bandwidth ([`engine::ceilings::copy_gb_per_s`]).
fn floor_ms(box_pixels: usize, encoded: &crate::ap::Encoded, copy_gb_per_s: f64) -> f64 {
    let bytes = 4 * box_pixels + 4 * encoded.active_pixels() + encoded.bytes();
    bytes as f64 / (copy_gb_per_s * 1e9) * 1e3
}

/// The paper's GPS point-cloud figures (ms) per size, each at small (6) and large (192)
/// scale, under the keys of [`PAPER_KEYS`]: OGL3 GPU compression and transfer, OGL3 CPU
/// transfer and compression, generic transfer.
const PAPER: [(&str, [[f64; 2]; 5]); 3] = [
    ("HD", [[0.689, 0.719], [0.044, 0.027], [4.140, 2.256], [2.584, 0.964], [36.539, 43.184]]),
    ("4K", [[1.809, 1.717], [0.097, 0.031], [15.602, 7.835], [9.994, 3.811], [143.465, 159.966]]),
    ("8K", [[6.248, 5.669], [0.297, 0.043], [61.075, 29.594], [39.376, 15.239], [574.176, 632.394]]),
];

/// The JSON keys of [`PAPER`]'s columns.
const PAPER_KEYS: [&str; 5] =
    ["paper_ms", "paper_d2h_ap_ms", "paper_d2h_roi_ms", "paper_cpu_encode_ms", "paper_d2h_raw_ms"];

/// Table 2, GPS point cloud: min ROI, max ROI, min AP, max AP (% of the raw frame).
const PAPER_RATIOS: [[f64; 4]; 2] = [[15.452, 75.262, 0.185, 2.433], [0.308, 71.010, 0.002, 0.468]];

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn min_max(v: &[f64]) -> (f64, f64) {
    (v.iter().cloned().fold(f64::MAX, f64::min), v.iter().cloned().fold(0.0, f64::max))
}

/// Runs the benchmark and hands each JSON line to `emit`.
pub fn run(ctx: &Context, quick: bool, mut emit: impl FnMut(serde_json::Value)) -> Result<()> {
    let sizes: &[(&str, u32, u32)] =
        if quick { &[("tiny", 96, 64)] } else { &[("HD", 1920, 1080), ("4K", 3840, 2160), ("8K", 7680, 4320)] };
    let scales: [usize; 2] = if quick { [2, 3] } else { [6, 192] };
    let points = if quick { 3000 } else { 4_000_000 };
    let reps = if quick { 1 } else { 10 };
    let cpu_reps = if quick { 1 } else { 3 };
    let scene = Scene::points(points, 7)?;
    emit(json!({"bench": "setup", "device": ctx.info().name, "points": points, "scene": format!("points:{points}:7"),
        "reps": reps, "cpu_reps": cpu_reps, "note": "CPU encoders run on the same frames; serial = the paper's CPU compression"}));
    let mut encoder = GpuEncoder::new(ctx)?;
    let plan = Plan { scales, reps, cpu_reps };
    for &(size, width, height) in sizes {
        // A size the device cannot hold (memory, binding range) is reported and skipped.
        if let Err(e) = run_size(ctx, &scene, &mut encoder, (size, width, height), &plan, &mut emit) {
            emit(json!({"bench": "ap_encode", "size": size, "error": e.to_string()}));
        }
    }
    Ok(())
}

/// Rank counts of the two scales and repetitions of the GPU and CPU measurements.
struct Plan {
    scales: [usize; 2],
    reps: usize,
    cpu_reps: usize,
}

fn run_size(
    ctx: &Context,
    scene: &Scene,
    encoder: &mut GpuEncoder,
    (size, width, height): (&str, u32, u32),
    plan: &Plan,
    emit: &mut impl FnMut(serde_json::Value),
) -> Result<()> {
    let Plan { scales, reps, cpu_reps } = *plan;
    let frames = FrameSource::new(ctx, scene, width, height)?;
    let n = width as usize * height as usize;
    for (scale, &ranks) in scales.iter().enumerate() {
        let mut roi_ratios = Vec::new();
        let mut ap_ratios = Vec::new();
        let timed_rank = ranks / 2;
        for rank in 0..ranks {
            let render_ms = frames.render(rank, ranks)?;
            let (encoded, roi, _) = encoder.encode(&frames.raster.color, &frames.raster.depth, width, height)?;
            // Every rank's GPU encoding is checked against the CPU encoder, not only the timed one.
            let frame = frames.read_back()?;
            if encode_parallel(&frame) != encoded {
                let what = format!("GPU and CPU encodings of rank {rank}");
                return Err(crate::CompositeError::EncodingsDiffer { what });
            }
            roi_ratios.push(roi.map_or(0, |r| r.pixels()) as f64 / n as f64);
            ap_ratios.push(encoded.bytes() as f64 / (8 * n) as f64);
            if rank == timed_rank {
                let line = time_rank(&frames, encoder, reps, cpu_reps)?;
                let paper = PAPER.iter().find(|(name, _)| *name == size).map(|(_, columns)| columns);
                let mut v = line;
                v["bench"] = json!("ap_encode");
                v["size"] = json!(size);
                v["width"] = json!(width);
                v["height"] = json!(height);
                v["ranks"] = json!(ranks);
                v["rank"] = json!(rank);
                v["render_ms"] = json!(render_ms);
                for (k, key) in PAPER_KEYS.into_iter().enumerate() {
                    v[key] = json!(paper.map(|columns| columns[k][scale]));
                }
                v["paper_note"] =
                    json!("paper: GPS point cloud on a K80, 6 / 192 ranks; nuclear plant 8K encode 10.818 ms");
                emit(v);
            }
        }
        let ((lo, hi), (alo, ahi)) = (min_max(&roi_ratios), min_max(&ap_ratios));
        emit(json!({"bench": "ap_ratios", "size": size, "ranks": ranks, "verified_ranks": ranks,
                "min_roi_pct": 100.0 * lo, "max_roi_pct": 100.0 * hi, "min_ap_pct": 100.0 * alo, "max_ap_pct": 100.0 * ahi,
                "mean_ap_pct": 100.0 * mean(&ap_ratios),
                "paper_pct": {"min_roi": PAPER_RATIOS[scale][0], "max_roi": PAPER_RATIOS[scale][1],
                    "min_ap": PAPER_RATIOS[scale][2], "max_ap": PAPER_RATIOS[scale][3]}}));
    }
    Ok(())
}

/// A scene's frames at one size, as the benchmarks take them: ranks' shares rendered on the
/// GPU, and read back to the host for the CPU encoders.
struct FrameSource<'a> {
    ctx: &'a Context,
    scene: &'a Scene,
    pub raster: Rasteriser,
    host_color: Buffer<u32>,
    host_depth: Buffer<f32>,
    view: Mat4,
    proj: Mat4,
}

impl<'a> FrameSource<'a> {
    pub fn new(ctx: &'a Context, scene: &'a Scene, width: u32, height: u32) -> Result<FrameSource<'a>> {
        let n = width as usize * height as usize;
        let (view, proj) = scene.camera(0, width, height);
        Ok(FrameSource {
            ctx,
            scene,
            raster: Rasteriser::new(ctx, width, height)?,
            host_color: ctx.buffer(n, Location::Download, "raw colour (host)")?,
            host_depth: ctx.buffer(n, Location::Download, "raw depth (host)")?,
            view,
            proj,
        })
    }

    /// Renders rank `rank`'s share of `ranks` into the rasteriser; returns the GPU time in ms.
    pub fn render(&self, rank: usize, ranks: usize) -> Result<f64> {
        let geometry = self.raster.upload(&self.scene.geometry.share(rank, ranks))?;
        timed_pass(self.ctx, |rec| self.raster.record(rec, &geometry, self.view, self.proj))
    }

    /// The rasteriser's current frame, copied to the host (untimed).
    pub fn read_back(&self) -> Result<Frame> {
        let raster = &self.raster;
        self.ctx.run(|rec| {
            rec.copy(&raster.color, &self.host_color);
            rec.copy(&raster.depth, &self.host_depth);
            Ok(())
        })?;
        let n = raster.width as usize * raster.height as usize;
        Ok(Frame {
            width: raster.width,
            height: raster.height,
            color: self.host_color.mapped()?[..n].to_vec(),
            depth: self.host_depth.mapped()?[..n].to_vec(),
        })
    }
}

/// Times the three readback paths and the encoders on the frame the rasteriser holds.
fn time_rank(
    frames: &FrameSource,
    encoder: &mut GpuEncoder,
    reps: usize,
    cpu_reps: usize,
) -> Result<serde_json::Value> {
    let FrameSource { ctx, raster, host_color, host_depth, .. } = frames;
    let (width, height) = (raster.width, raster.height);
    let n = width as usize * height as usize;
    // Warm-up (first use of each pipeline and buffer).
    let (encoded, roi, _) = encoder.encode(&raster.color, &raster.depth, width, height)?;
    // Full clocks for the timed passes (GPUs clock down within seconds of idling).
    engine::ceilings::warm_up(ctx, std::time::Duration::from_millis(300))?;
    let mut raw_ms = Vec::new();
    let mut roi_d2h_ms = Vec::new();
    let mut gpu = Vec::new();
    for _ in 0..=reps {
        raw_ms.push(timed_pass(ctx, |rec| {
            rec.copy(&raster.color, host_color);
            rec.copy(&raster.depth, host_depth);
        })?);
        if let Some(r) = roi {
            let rect = [r.x0, r.y0, r.x1 - r.x0 + 1, r.y1 - r.y0 + 1];
            roi_d2h_ms.push(timed_pass(ctx, |rec| raster.record_rect_readback(rec, rect, host_color, host_depth))?);
        }
    }
    // The encodings back to back after a warm-up: between the copies above the GPU clocked
    // down often enough to move the medians by half.
    engine::ceilings::warm_up(ctx, std::time::Duration::from_millis(100))?;
    for _ in 0..=reps {
        let (again, _, times) = encoder.encode(&raster.color, &raster.depth, width, height)?;
        if again != encoded {
            return Err(crate::CompositeError::EncodingsDiffer { what: "repeated GPU encodings".into() });
        }
        gpu.push(times);
    }
    // Drop the first repetition of each (warm-up of the copy paths).
    raw_ms.remove(0);
    if !roi_d2h_ms.is_empty() {
        roi_d2h_ms.remove(0);
    }
    gpu.remove(0);

    // CPU encoders on the same frame (read back once, untimed).
    let frame = frames.read_back()?;

    let mut cpu_roi = Vec::new();
    let mut cpu_full = Vec::new();
    let mut cpu_par = Vec::new();
    for _ in 0..cpu_reps {
        if let Some(r) = &roi {
            let (e, ms) = time_ms(|| encode_roi(&frame, r));
            if e != encoded {
                return Err(crate::CompositeError::EncodingsDiffer { what: "CPU ROI and GPU encodings".into() });
            }
            cpu_roi.push(ms);
        }
        let (full, ms) = time_ms(|| encode_serial(&frame));
        cpu_full.push(ms);
        let (par, ms) = time_ms(|| encode_parallel(&frame));
        cpu_par.push(ms);
        if full != encoded || par != encoded {
            return Err(crate::CompositeError::EncodingsDiffer {
                what: "CPU and GPU encodings in the benchmark".into(),
            });
        }
    }
    let active = encoded.active_pixels();
    let roi_pixels = roi.map_or(0, |r: Roi| r.pixels());
    let copy_gb_per_s = engine::ceilings::copy_gb_per_s(ctx)?;
    let pipeline_floor_ms = floor_ms(n, &encoded, copy_gb_per_s);
    let floor_ms = floor_ms(roi_pixels, &encoded, copy_gb_per_s);
    // Medians: a repetition that meets a clock dip (the host work between passes lets the
    // GPU slow down) should not move the figure.
    let encode_ms = median(&gpu.iter().map(|t| t.encode_ms).collect::<Vec<_>>());
    let roi_ms = median(&gpu.iter().map(|t| t.roi_ms).collect::<Vec<_>>());
    Ok(json!({
        "gpu_ms": encode_ms,
        "cpu_ms": mean(&cpu_roi),
        "cpu_full_frame_ms": mean(&cpu_full),
        "cpu_parallel_ms": mean(&cpu_par),
        "floor_ms": floor_ms,
        "floor": format!("bytes read+written / {copy_gb_per_s:.0} GB/s (this device's copy bandwidth): depth of every pixel in the ROI box, colour of active pixels, payload written"),
        "floor_fraction": floor_ms / encode_ms,
        "roi_ms": roi_ms,
        "pipeline_floor_ms": pipeline_floor_ms,
        "pipeline_floor": "the floor with the whole frame as the box: every input byte read once",
        "pipeline_floor_fraction": pipeline_floor_ms / (roi_ms + encode_ms),
        "d2h_ap_ms": median(&gpu.iter().map(|t| t.d2h_ms).collect::<Vec<_>>()),
        "d2h_roi_ms": median(&roi_d2h_ms),
        "d2h_raw_ms": median(&raw_ms),
        "bytes_raw": 8 * n,
        "bytes_roi": 8 * roi_pixels,
        "bytes_ap": encoded.bytes(),
        "ratio_roi_pct": 100.0 * (8 * roi_pixels) as f64 / (8 * n) as f64,
        "ratio_ap_pct": 100.0 * encoded.bytes() as f64 / (8 * n) as f64,
        "active_pixels": active,
    }))
}
