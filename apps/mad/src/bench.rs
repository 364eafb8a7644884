//! `mad bench`: the benchmark set on generated pairs (deterministic seeds): one
//! 512x512 pair (latency), a batch of 1000 512x512 pairs (throughput), one 1920x1080 pair;
//! each beside the CPU reference on the same inputs (the batch's CPU figure is measured on a
//! subset and said so), the paper's 40.2 ms (Titan Black) and a memory-traffic floor.
//! Last, one 8000x8000 pair scored in tiles under a 2 GiB budget (`mad score --max-memory
//! 2G`), beside the same pair over the whole image on the GPU and in the same tiles on the
//! CPU (f64; a few minutes on the host's cores).
//! `--quick` runs tiny sizes so a test can exercise it on lavapipe in seconds.

use std::collections::BTreeMap;
use std::time::Instant;

use engine::{Context, PassTime};
use kit::stats::{median, ms_since};
use serde::Serialize;

use crate::gpu::GpuMad;
use crate::synth::{distort, scene, Distortion};
use crate::{GrayImage, MadError};

/// The paper's time for one 512x512 pair on a Titan Black (mad-iqa-gpu.txt, Table 2).
const PAPER_MS_512: f64 = 40.2;
/// Timed repetitions of the single-pair latency.
const LATENCY_RUNS: usize = 10;

/// Bytes each pair must move at least, per pixel, on this design: 23 batched 2D FFTs of two
/// complex f32 images (2 axes, read + write: 64 B/px each); the CSF (read + write of two
/// complex images: 32 B/px); the log-Gabor filter reading the two spectra once (16 B/px) and
/// writing 20 bands of them (16 B/px each); 21 reads of two complex images by the block
/// statistics (16 B/px each); plus the input, the squared differences and the detection map
/// (about 50 B/px).
fn floor_bytes_per_pixel() -> f64 {
    23.0 * 64.0 + 32.0 + 16.0 + 20.0 * 16.0 + 21.0 * 16.0 + 50.0
}

/// The floor: the bytes each pair must move over the device's measured copy bandwidth.
struct Floor {
    copy_gb_per_s: f64,
}

impl Floor {
    fn ms(&self, pixels: usize, pairs: usize) -> f64 {
        floor_bytes_per_pixel() * pixels as f64 * pairs as f64 / (self.copy_gb_per_s * 1e9) * 1e3
    }

    /// Its definition, printed beside it.
    fn text(&self) -> String {
        format!("bytes moved / {:.0} GB/s (this device's copy bandwidth)", self.copy_gb_per_s)
    }
}

/// A few distinct pairs of one size to cycle through.
fn pairs(width: usize, height: usize, distinct: usize) -> Vec<(GrayImage, GrayImage)> {
    let kinds = [Distortion::Jpeg(30), Distortion::Blur(1.5), Distortion::Noise(10.0), Distortion::Contrast(0.6)];
    (0..distinct)
        .map(|i| {
            let r = scene(width, height, 100 + i as u64);
            let d = distort(&r, kinds[i % kinds.len()], i as u64);
            (r, d)
        })
        .collect()
}

fn passes_ms(passes: &[PassTime]) -> BTreeMap<String, f64> {
    passes.iter().map(|p| (p.name.clone(), p.ms)).collect()
}

/// One measurement of `mad bench`. Its text is its JSON line (benchmark logs parse it).
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum BenchLine {
    Setup {
        bench: &'static str,
        device: String,
        pipeline_ms: f64,
        /// The measured copy bandwidth the floors divide by.
        copy_gb_per_s: f64,
        cpu_threads: usize,
    },
    Latency {
        bench: String,
        size: String,
        pairs: usize,
        /// Wall time of one pair, upload to scores (median).
        gpu_ms: f64,
        /// GPU time of its command buffer, and of each pass (the stages' marks).
        gpu_kernel_ms: f64,
        gpu_passes_ms: BTreeMap<String, f64>,
        /// The detection and appearance stages' passes (after the pass that prepares both
        /// stages' inputs and their forward FFTs).
        #[serde(skip_serializing_if = "Option::is_none")]
        gpu_detection_ms: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        gpu_appearance_ms: Option<f64>,
        /// Dispatches the appearance stage records after the forward FFTs.
        #[serde(skip_serializing_if = "Option::is_none")]
        appearance_dispatches: Option<usize>,
        cpu_ms: f64,
        paper_ms: Option<f64>,
        floor_ms: f64,
        floor: String,
        mad_gpu: f64,
        mad_cpu: f64,
        rel_diff: f64,
        runs: usize,
    },
    Throughput {
        bench: String,
        size: String,
        pairs: usize,
        chunk: usize,
        gpu_ms: f64,
        gpu_per_pair_ms: f64,
        pairs_per_s: f64,
        gpu_kernel_ms: f64,
        gpu_passes_ms: BTreeMap<String, f64>,
        cpu_per_pair_ms: f64,
        cpu_ms: f64,
        cpu_note: String,
        paper_ms: f64,
        floor_ms: f64,
        floor: String,
    },
    /// One pair over the memory budget, scored in tiles (`mad score --max-memory`).
    Tiled {
        bench: String,
        size: String,
        budget: String,
        tiles: usize,
        window: String,
        halo: usize,
        /// Wall time of the tiled pair, staging to scores (its first run: the slot's setup included).
        gpu_ms: f64,
        gpu_per_tile_ms: f64,
        /// The same pair over the whole image (budget lifted), where the device holds it.
        #[serde(skip_serializing_if = "Option::is_none")]
        gpu_whole_ms: Option<f64>,
        mad_tiled: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        mad_whole: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        rel_diff: Option<f64>,
        /// The CPU's f64 tiles of the same plan, and `mad_tiled` against them (relative):
        /// whether the GPU's tiles add an error of their own to the tiles' (`crate::tiled`);
        /// pairs up to [`CPU_TILED_MAX_PIXELS`] only. The whole-image f64 reference of the
        /// 8000x8000 pair is 22.034397 (measured once: 17 minutes and 8 GB on two cores, too
        /// long to repeat here).
        #[serde(skip_serializing_if = "Option::is_none")]
        mad_cpu_tiled: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cpu_tiled_ms: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        rel_diff_cpu_tiled: Option<f64>,
    },
}

kit::json_display!(BenchLine);

/// The largest pair whose tiles the bench also scores on the CPU.
const CPU_TILED_MAX_PIXELS: usize = 1 << 20;

/// Times one pair on the GPU (median of `runs` after a warm-up) and once on the CPU.
fn latency(
    gpu: &GpuMad,
    name: &str,
    width: usize,
    height: usize,
    runs: usize,
    paper: Option<f64>,
    floor: &Floor,
) -> Result<(), MadError> {
    let (r, d) = pairs(width, height, 1).remove(0);
    let warm = gpu.score(&r, &d, false)?.0;
    engine::ceilings::warm_up(gpu.context(), engine::ceilings::WARM_UP)?;
    let mut wall = Vec::new();
    let mut passes = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        passes = gpu.score_stream([((), &r, &d)], Some(1), false, |_| {})?;
        wall.push(ms_since(t));
    }
    let t = Instant::now();
    let (cpu, _) = crate::cpu::score(&r, &d)?;
    let cpu_ms = ms_since(t);
    let pass = |names: &[&str]| {
        let ms: Vec<f64> = passes.iter().filter(|p| names.contains(&p.name.as_str())).map(|p| p.ms).collect();
        (!ms.is_empty()).then(|| ms.iter().sum())
    };
    let line = BenchLine::Latency {
        bench: name.into(),
        size: format!("{width}x{height}"),
        pairs: 1,
        gpu_ms: median(&wall),
        gpu_kernel_ms: passes.iter().map(|p| p.ms).sum(),
        gpu_passes_ms: passes_ms(&passes),
        gpu_detection_ms: pass(&["detection"]),
        gpu_appearance_ms: pass(&crate::gpu::appearance::MARKS),
        appearance_dispatches: gpu.appearance_dispatches(width, height, 1),
        cpu_ms,
        paper_ms: paper,
        floor_ms: floor.ms(width * height, 1),
        floor: floor.text(),
        mad_gpu: warm.mad,
        mad_cpu: cpu.mad,
        rel_diff: (warm.mad - cpu.mad).abs() / cpu.mad.abs().max(1e-12),
        runs,
    };
    kit::emit(&line, &[]);
    Ok(())
}

/// Scores `count` pairs as one stream and reports pairs per second; the CPU reference runs on
/// the first `cpu_count` of them.
fn throughput(
    gpu: &GpuMad,
    name: &str,
    (size, count, cpu_count): (usize, usize, usize),
    floor: &Floor,
) -> Result<(), MadError> {
    let distinct = pairs(size, size, 8);
    let stream = |n: usize| (0..n).map(|i| (i, &distinct[i % distinct.len()].0, &distinct[i % distinct.len()].1));
    // A chunk size that divides the count, so every chunk reuses the two slots (FFT plans,
    // buffers) the warm-up made, and no plan is built inside the timing.
    let largest = gpu.default_chunk(size, size).min(count);
    let chunk = (1..=largest).rev().find(|c| count.is_multiple_of(*c)).unwrap_or(1);
    gpu.score_stream(stream((2 * chunk).min(count)), Some(chunk), false, |_| {})?;
    engine::ceilings::warm_up(gpu.context(), engine::ceilings::WARM_UP)?;
    let t = Instant::now();
    let mut scored = 0usize;
    let passes = gpu.score_stream(stream(count), Some(chunk), false, |_| scored += 1)?;
    let gpu_ms = ms_since(t);
    let t = Instant::now();
    for (r, d) in distinct.iter().cycle().take(cpu_count) {
        crate::cpu::score(r, d)?;
    }
    let cpu_per_pair_ms = ms_since(t) / cpu_count as f64;
    let line = BenchLine::Throughput {
        bench: name.into(),
        size: format!("{size}x{size}"),
        pairs: scored,
        chunk,
        gpu_ms,
        gpu_per_pair_ms: gpu_ms / scored as f64,
        pairs_per_s: scored as f64 / (gpu_ms / 1e3),
        gpu_kernel_ms: passes.iter().map(|p| p.ms).sum(),
        gpu_passes_ms: passes_ms(&passes),
        cpu_per_pair_ms,
        cpu_ms: cpu_per_pair_ms * scored as f64,
        cpu_note: format!("CPU reference timed on {cpu_count} pairs, extrapolated to {scored}"),
        paper_ms: PAPER_MS_512 * scored as f64,
        floor_ms: floor.ms(size * size, scored),
        floor: floor.text(),
    };
    kit::emit(&line, &[]);
    Ok(())
}

/// Scores one `width x height` pair in tiles under `budget` bytes (with a `halo` other than
/// the default where given), then over the whole image with the budget lifted, where the
/// device holds it, and on the CPU in the same tiles.
fn tiled(
    ctx: &Context,
    name: &str,
    (width, height): (usize, usize),
    budget: u64,
    halo: Option<usize>,
) -> Result<(), MadError> {
    let mut gpu = GpuMad::new(ctx)?;
    if let Some(h) = halo {
        gpu.set_tile_halo(h);
    }
    let (r, d) = pairs(width, height, 1).remove(0);
    let before = kit::budget::get();
    kit::budget::set(budget);
    let run = || -> Result<_, MadError> {
        let plan = gpu.plan(width as u64, height as u64, false)?.ok_or_else(|| {
            MadError::TilePlan(format!("{width}x{height} fits whole under {}", kit::units::human(budget)))
        })?;
        // No warm-up: one tiled score is many tiles, and a user's first pays the same setup.
        let t = Instant::now();
        let (scores, _) = gpu.score_tiled(&r, &d, &plan, false)?;
        Ok((plan, scores, ms_since(t)))
    };
    let tiled = run();
    kit::budget::set(before);
    let (plan, scores, gpu_ms) = tiled?;
    let whole = {
        let t = Instant::now();
        gpu.score(&r, &d, false).ok().map(|(s, _)| (s, ms_since(t)))
    };
    // The CPU's tiles of an 8000x8000 pair take minutes: small pairs only.
    let cpu = if width * height <= CPU_TILED_MAX_PIXELS {
        let t = Instant::now();
        let (cpu_tiled, _) = crate::cpu::tiled::score_cpu(&r, &d, &plan, false)?;
        Some((cpu_tiled.mad, ms_since(t)))
    } else {
        None
    };
    let rel = |a: f64, b: f64| (a - b).abs() / b.abs().max(1e-12);
    let line = BenchLine::Tiled {
        bench: name.into(),
        size: format!("{width}x{height}"),
        budget: kit::units::human(budget),
        tiles: plan.tiles().len(),
        window: format!("{}x{}", plan.window.0, plan.window.1),
        halo: plan.halo,
        gpu_ms,
        gpu_per_tile_ms: gpu_ms / plan.tiles().len() as f64,
        gpu_whole_ms: whole.map(|w| w.1),
        mad_tiled: scores.mad,
        mad_whole: whole.map(|w| w.0.mad),
        rel_diff: whole.map(|w| rel(scores.mad, w.0.mad)),
        mad_cpu_tiled: cpu.map(|c| c.0),
        cpu_tiled_ms: cpu.map(|c| c.1),
        rel_diff_cpu_tiled: cpu.map(|c| rel(scores.mad, c.0)),
    };
    kit::emit(&line, &[]);
    Ok(())
}

/// Runs the benchmark set on `ctx`, one JSON line per measurement.
pub fn run(ctx: &Context, quick: bool) -> Result<(), MadError> {
    let t = Instant::now();
    let gpu = GpuMad::new(ctx)?;
    let pipeline_ms = ms_since(t);
    let floor = Floor { copy_gb_per_s: engine::ceilings::copy_gb_per_s(ctx)? };
    let setup = BenchLine::Setup {
        bench: "setup",
        device: ctx.info().name.clone(),
        pipeline_ms,
        copy_gb_per_s: floor.copy_gb_per_s,
        cpu_threads: rayon::current_num_threads(),
    };
    kit::emit(&setup, &[]);
    if quick {
        latency(&gpu, "latency_64", 64, 64, 2, None, &floor)?;
        throughput(&gpu, "batch_64", (64, 6, 2), &floor)?;
        latency(&gpu, "latency_97x61", 97, 61, 1, None, &floor)?;
        tiled(ctx, "tiled_301x157", (301, 157), 16 * 301 * 157 + 128 * 128 * 200, Some(16))?;
    } else {
        latency(&gpu, "latency_512", 512, 512, LATENCY_RUNS, Some(PAPER_MS_512), &floor)?;
        throughput(&gpu, "batch_512", (512, 1000, 16), &floor)?;
        latency(&gpu, "latency_1920x1080", 1920, 1080, LATENCY_RUNS, None, &floor)?;
        tiled(ctx, "tiled_8000_2G", (8000, 8000), 2 << 30, None)?;
        // How far the tiles' scores move with the halo: a larger one, and the CPU tiles'.
        tiled(ctx, "tiled_8000_2G_halo1024", (8000, 8000), 2 << 30, Some(1024))?;
        tiled(ctx, "tiled_8000_2G_halo512", (8000, 8000), 2 << 30, Some(crate::cpu::tiled::CPU_APPEARANCE_HALO))?;
    }
    Ok(())
}
