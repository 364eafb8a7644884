//! `smoe bench`: the paper's Table 4 (a 1080p model with K = 169,401 and a 4K model with
//! K = 686,763, made by tiling a fitted model as the paper does, rendered at block sizes
//! 16..256 in both modes with exact culling, the relevance window, and no culling), the
//! build of the tile lists alone (`tile_lists` lines), and EM fit time + PSNR at K = 500
//! and 2000 on a generated 512x512 image, and the refinement step per pass (`refine_step`).
//! One JSON object per measurement on stdout;
//! `--set` picks the render measurements (Table 4 and the tile lists) or the fits alone.

use std::collections::BTreeMap;
use std::time::Instant;

use engine::Context;
use kit::stats::median;
use serde::Serialize;

use smoe::cpu::em::em_step_cpu;
use smoe::data::{sample_image, tile_model, Grid};
use smoe::em::regularisation;
use smoe::fit::{fit_gpu, grid_init, render_psnr};
use smoe::gpu::{Cull, Mode, RenderSettings, Renderer};
use smoe::model::Model;

/// FP32 rate the floors are computed against (measured FMA ceiling class of an H100).
const PEAK_FLOPS: f64 = 50e12;
/// FLOPs of one kernel evaluated at one pixel (2D): offset, quadratic form, log-weight,
/// softmax update, expert (3 x 2 matrix-vector), accumulation.
const FLOPS_PER_EVAL: f64 = 32.0;

struct Sizes {
    tile_px: usize,
    tile_k: usize,
    frames: Vec<(&'static str, usize, usize, usize, f64)>,
    blocks: Vec<u32>,
    /// Block sizes of the `tile_lists` lines (the smaller, the more tiles to scan).
    list_blocks: Vec<u32>,
    reps: usize,
    fit_px: usize,
    fit_ks: Vec<usize>,
    fit_iters: usize,
    cpu_crop: usize,
    cpu_fit_px: usize,
}

fn sizes(quick: bool) -> Sizes {
    if quick {
        Sizes {
            tile_px: 32,
            tile_k: 90,
            frames: vec![("1080p", 160, 90, 1200, 11.7), ("4K", 320, 180, 4900, 44.4)],
            blocks: vec![16, 32],
            list_blocks: vec![8, 16],
            reps: 1,
            fit_px: 48,
            fit_ks: vec![20],
            fit_iters: 3,
            cpu_crop: 8,
            cpu_fit_px: 16,
        }
    } else {
        Sizes {
            tile_px: 128,
            tile_k: 1400,
            frames: vec![("1080p", 1920, 1080, 169_401, 11.7), ("4K", 3840, 2160, 686_763, 44.4)],
            blocks: vec![8, 16, 32, 64, 128, 256],
            list_blocks: vec![8, 16, 32],
            reps: 5,
            fit_px: 512,
            fit_ks: vec![500, 2000],
            fit_iters: 30,
            cpu_crop: 24,
            cpu_fit_px: 64,
        }
    }
}

/// How the floors are computed.
const RENDER_FLOOR: &str = "flops: kernel-pixel evaluations x 32 FLOP / 50 TFLOP/s";

/// One render measurement.
#[derive(Serialize)]
struct RenderBench {
    bench: String,
    size: String,
    kernels: usize,
    mode: Mode,
    cull: Cull,
    block: u32,
    window_px: Option<u32>,
    gpu_ms: f64,
    wall_ms: f64,
    passes_ms: BTreeMap<String, f64>,
    kernels_per_block: Option<f64>,
    cpu_ms: f64,
    cpu_note: String,
    paper_ms: Option<f64>,
    paper_note: Option<&'static str>,
    floor_ms: f64,
    floor: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_abs_diff_vs_exact: Option<f32>,
}

/// The tile-list build of one frame alone (`Renderer::record_bins`: culling records, the
/// bound, per-tile counts, their offsets, the lists), robust mode.
#[derive(Serialize)]
struct TileListBench {
    bench: String,
    size: String,
    kernels: usize,
    cull: Cull,
    block: u32,
    tiles: usize,
    list_entries: usize,
    gpu_ms: f64,
    wall_ms: f64,
    passes_ms: BTreeMap<String, f64>,
}

/// One fit measurement.
#[derive(Serialize)]
struct FitBench {
    bench: &'static str,
    size: String,
    kernels: usize,
    iterations: usize,
    gpu_ms: Option<f64>,
    wall_ms: f64,
    psnr_db: f64,
    loglik_first: Option<f64>,
    loglik_last: Option<f64>,
    cpu_ms: f64,
    cpu_note: String,
    paper_ms: Option<f64>,
    floor_ms: f64,
    floor: &'static str,
    device: String,
}

// Benchmark lines read as JSON in text mode too, so runs can be collected with `jq`.
kit::json_display!(RenderBench, TileListBench, FitBench, RefineBench);

/// Median GPU ms per pass, median GPU ms in total, median wall ms, tile-list entries.
struct Timing {
    passes: Vec<(String, f64)>,
    gpu_ms: f64,
    wall_ms: f64,
    entries: usize,
}

/// What a timed frame records.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Work {
    /// The whole frame.
    Frame,
    /// The tile lists only.
    Lists,
}

/// Records `reps` frames' `work` (after a warm-up that also sizes the tile lists); returns
/// median GPU ms per pass name and in total, median wall ms, and the list entries.
fn time_frames(
    ctx: &Context,
    renderer: &mut Renderer,
    settings: RenderSettings,
    reps: usize,
    work: Work,
) -> engine::Result<Timing> {
    let mut frame = renderer.frame(settings, 0)?;
    let mut entries = 0;
    for _ in 0..2 {
        let mut rec = ctx.recorder()?;
        renderer.record(&mut rec, &frame)?;
        rec.submit()?.wait()?;
        if settings.cull != Cull::Off {
            entries = renderer.list_entries(&frame)?;
            renderer.fit_capacity(&mut frame, entries)?;
        }
    }
    // Full clocks for the timed frames (GPUs clock down within seconds of idling).
    engine::ceilings::warm_up(ctx, std::time::Duration::from_millis(300))?;
    let mut passes: Vec<(String, Vec<f64>)> = Vec::new();
    let mut totals = Vec::new();
    let mut walls = Vec::new();
    for _ in 0..reps {
        let start = Instant::now();
        let mut rec = ctx.recorder()?;
        rec.enable_profiling(8)?;
        match work {
            Work::Frame => renderer.record(&mut rec, &frame)?,
            Work::Lists => renderer.record_bins(&mut rec, &frame)?,
        }
        let times = rec.submit()?.wait_profiled()?;
        walls.push(start.elapsed().as_secs_f64() * 1e3);
        totals.push(times.iter().map(|t| t.ms).sum());
        for t in times {
            match passes.iter_mut().find(|(n, _)| *n == t.name) {
                Some((_, v)) => v.push(t.ms),
                None => passes.push((t.name, vec![t.ms])),
            }
        }
    }
    Ok(Timing {
        passes: passes.into_iter().map(|(n, v)| (n, median(&v))).collect(),
        gpu_ms: median(&totals),
        wall_ms: median(&walls),
        entries,
    })
}

/// Which measurements `smoe bench` makes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Set {
    /// Everything: Table 4, the tile lists, the fits
    All,
    /// Table 4 and the tile-list build alone
    Render,
    /// The EM fits
    Fit,
    /// The refinement step's GPU time per pass
    Refine,
}

/// Runs the benchmark set on `ctx`, printing one JSON line per measurement.
pub fn run(ctx: &Context, quick: bool, set: Set) -> anyhow::Result<()> {
    let s = sizes(quick);
    if matches!(set, Set::All | Set::Render) {
        render(ctx, &s)?;
    }
    if matches!(set, Set::All | Set::Fit) {
        fits(ctx, &s)?;
    }
    if matches!(set, Set::All | Set::Refine) {
        refine_passes(ctx, &s)?;
    }
    Ok(())
}

/// The tile-list and Table 4 lines of every frame size.
fn render(ctx: &Context, s: &Sizes) -> anyhow::Result<()> {
    // The tile: a fitted model of the generated image, as dense as the paper's models.
    let tile_grid = sample_image(s.tile_px, s.tile_px);
    let start = Instant::now();
    let (tile, _) = fit_gpu(ctx, &tile_grid, s.tile_k, 10, |_, _| {})?;
    eprintln!("smoe bench: fitted a {}-kernel tile in {:.0} ms", s.tile_k, start.elapsed().as_secs_f64() * 1e3);

    for &(name, w, h, k, paper_ms) in &s.frames {
        let model = tile_model(&tile, s.tile_px, w, h, k);
        // CPU reference: the f64 renderer over all K kernels on a crop, extrapolated.
        let crop = Model { extent: vec![w, h], ..model.clone() };
        let t = Instant::now();
        let _ = smoe::cpu::render::render_region(&crop, w, h, [0.0; 2], [w / 2, h / 2, s.cpu_crop, s.cpu_crop]);
        let cpu_crop_ms = t.elapsed().as_secs_f64() * 1e3;
        let cpu_ms = cpu_crop_ms * (w * h) as f64 / (s.cpu_crop * s.cpu_crop) as f64;
        let cpu_note = format!(
            "f64 reference over all K on a {0}x{0} crop ({cpu_crop_ms:.0} ms), scaled to the frame",
            s.cpu_crop
        );
        tile_lists(ctx, s, &model, name)?;
        let mut exact_image: Option<Vec<f32>> = None;
        for mode in [Mode::Fast, Mode::Robust] {
            let mut renderer = Renderer::new(ctx, &model, mode)?;
            for &block in &s.blocks {
                for cull in [Cull::Exact, Cull::Window] {
                    let settings =
                        RenderSettings { cull, tile: block, window: 16.0, ..RenderSettings::new(w as u32, h as u32) };
                    let Timing { passes, gpu_ms, wall_ms, entries } =
                        time_frames(ctx, &mut renderer, settings, s.reps, Work::Frame)?;
                    let tiles = (w as u32).div_ceil(block) as usize * (h as u32).div_ceil(block) as usize;
                    let evals = entries as f64 * (block * block) as f64;
                    let mut line = RenderBench {
                        bench: format!("render_{name}"),
                        size: format!("{w}x{h}"),
                        kernels: k,
                        mode,
                        cull,
                        block,
                        window_px: Some(16),
                        gpu_ms,
                        wall_ms,
                        passes_ms: passes.into_iter().collect(),
                        kernels_per_block: Some(entries as f64 / tiles as f64),
                        cpu_ms,
                        cpu_note: cpu_note.clone(),
                        paper_ms: (block == 16).then_some(paper_ms),
                        paper_note: Some("Titan X, block 16, relevance window (Table 4)"),
                        floor_ms: evals * FLOPS_PER_EVAL / PEAK_FLOPS * 1e3,
                        floor: RENDER_FLOOR,
                        max_abs_diff_vs_exact: None,
                    };
                    if block == 16 && mode == Mode::Fast {
                        // Accuracy of the relevance window against exact culling, same frame.
                        let (img, _) = renderer.render_rgb(settings)?;
                        match (&exact_image, cull) {
                            (None, Cull::Exact) => exact_image = Some(img),
                            (Some(e), Cull::Window) => {
                                let diff = img.iter().zip(e).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
                                line.max_abs_diff_vs_exact = Some(diff);
                            }
                            _ => {}
                        }
                    }
                    kit::emit(&line, &[]);
                }
            }
            if name == "1080p" && mode == Mode::Fast {
                let settings = RenderSettings { cull: Cull::Off, tile: 16, ..RenderSettings::new(w as u32, h as u32) };
                let Timing { passes, gpu_ms, wall_ms, .. } = time_frames(ctx, &mut renderer, settings, 1, Work::Frame)?;
                let evals = (w * h * k) as f64;
                kit::emit(
                    &RenderBench {
                        bench: format!("render_{name}"),
                        size: format!("{w}x{h}"),
                        kernels: k,
                        mode,
                        cull: Cull::Off,
                        block: 16,
                        window_px: None,
                        gpu_ms,
                        wall_ms,
                        passes_ms: passes.into_iter().collect(),
                        kernels_per_block: None,
                        cpu_ms,
                        cpu_note: cpu_note.clone(),
                        paper_ms: None,
                        paper_note: None,
                        floor_ms: evals * FLOPS_PER_EVAL / PEAK_FLOPS * 1e3,
                        floor: RENDER_FLOOR,
                        max_abs_diff_vs_exact: None,
                    },
                    &[],
                );
            }
        }
    }
    Ok(())
}

/// The `tile_lists` lines of one frame size: the lists alone, exact culling and the window.
fn tile_lists(ctx: &Context, s: &Sizes, model: &Model, name: &str) -> anyhow::Result<()> {
    let (w, h) = (model.extent[0] as u32, model.extent[1] as u32);
    let mut renderer = Renderer::new(ctx, model, Mode::Robust)?;
    for &block in &s.list_blocks {
        for cull in [Cull::Exact, Cull::Window] {
            let settings = RenderSettings { cull, tile: block, window: 16.0, ..RenderSettings::new(w, h) };
            let Timing { passes, gpu_ms, wall_ms, entries } =
                time_frames(ctx, &mut renderer, settings, s.reps, Work::Lists)?;
            let line = TileListBench {
                bench: format!("tile_lists_{name}"),
                size: format!("{w}x{h}"),
                kernels: model.len(),
                cull,
                block,
                tiles: (w.div_ceil(block) * h.div_ceil(block)) as usize,
                list_entries: entries,
                gpu_ms,
                wall_ms,
                passes_ms: passes.into_iter().collect(),
            };
            kit::emit(&line, &[]);
        }
    }
    Ok(())
}

/// The fit lines.
fn fits(ctx: &Context, s: &Sizes) -> anyhow::Result<()> {
    let grid = sample_image(s.fit_px, s.fit_px);
    for &k in &s.fit_ks {
        let t = Instant::now();
        let (model, report) = fit_gpu(ctx, &grid, k, s.fit_iters, |_, _| {})?;
        let fit_wall = t.elapsed().as_secs_f64() * 1e3;
        let quality = render_psnr(ctx, &model, &grid)?;
        // CPU reference: one f64 EM iteration on a smaller image, scaled by samples.
        let small: Grid = sample_image(s.cpu_fit_px, s.cpu_fit_px);
        let init = grid_init(&small, k);
        let t = Instant::now();
        em_step_cpu(&init, &small.samples(), &regularisation(&small))?;
        let cpu_iter_ms = t.elapsed().as_secs_f64() * 1e3 * (grid.len() as f64 / small.len() as f64);
        let evals = 2.0 * (grid.len() * k) as f64 * s.fit_iters as f64;
        kit::emit(
            &FitBench {
                bench: "fit",
                size: format!("{0}x{0}", s.fit_px),
                kernels: k,
                iterations: s.fit_iters,
                gpu_ms: report.gpu_ms,
                wall_ms: fit_wall,
                psnr_db: quality,
                loglik_first: report.loglik.first().copied(),
                loglik_last: report.loglik.last().copied(),
                cpu_ms: cpu_iter_ms * s.fit_iters as f64,
                cpu_note: format!(
                    "f64 EM iteration on all cores on {0}x{0} scaled by samples and iterations",
                    s.cpu_fit_px
                ),
                paper_ms: None,
                floor_ms: evals * 60.0 / PEAK_FLOPS * 1e3,
                floor: "flops: 2 passes x samples x kernels x 60 FLOP per joint log-density / 50 TFLOP/s",
                device: ctx.info().name.clone(),
            },
            &[],
        );
    }
    Ok(())
}

/// One refinement-step measurement: GPU milliseconds per step of each pass.
#[derive(Serialize)]
struct RefineBench {
    bench: &'static str,
    size: String,
    kernels: usize,
    steps: usize,
    step_ms: f64,
    passes_ms: BTreeMap<String, f64>,
    wall_ms_per_step: f64,
    /// Pixel-kernel pairs per step: the backward pass's support boxes and the blend's tile lists.
    backward_pixels: usize,
    blend_pixels: usize,
    /// The largest support box (pixels) and the mean.
    box_max: f32,
    box_mean: f64,
    device: String,
}

/// The refinement step's passes at 44 pixels per kernel (GaussianImage's density on Kodak)
/// on the embedded astronaut photo at the fits' size, after their EM: GPU time of each pass
/// per step, from one profiled command buffer, and the wall time per step of an unprofiled
/// run of the same steps.
fn refine_passes(ctx: &Context, s: &Sizes) -> anyhow::Result<()> {
    let grid = smoe::data::Grid::from_image(&kit::photos::ASTRONAUT.resized(s.fit_px, s.fit_px, 3)?);
    let k = (grid.len() / 44).max(1);
    let (model, _) = fit_gpu(ctx, &grid, k, s.fit_iters, |_, _| {})?;
    let params = smoe::params::Params::from_model(&model)?;
    let steps = if s.reps > 1 { 64 } else { 4 };
    let options = smoe::params::RefineOptions { steps, ..Default::default() };
    let mut gpu = smoe::gpu::refine::GpuRefine::new(ctx, &params, &grid, steps, None)?;
    let passes = gpu.profile(options, steps)?;
    let mut gpu = smoe::gpu::refine::GpuRefine::new(ctx, &params, &grid, steps, None)?;
    let t = Instant::now();
    gpu.run(&params, options, &grid, |_, _| {})?;
    let wall = t.elapsed().as_secs_f64() * 1e3 / steps as f64;
    let (boxes, blend_pixels) = gpu.work()?;
    let backward_pixels: f64 = boxes.iter().map(|&b| b as f64).sum();
    let per_step: BTreeMap<String, f64> =
        passes.iter().filter(|p| p.name != "begin").map(|p| (p.name.clone(), p.ms / steps as f64)).collect();
    kit::emit(
        &RefineBench {
            bench: "refine_step",
            size: format!("astronaut {0}x{0}", s.fit_px),
            kernels: k,
            steps,
            step_ms: per_step.values().sum(),
            passes_ms: per_step,
            wall_ms_per_step: wall,
            backward_pixels: backward_pixels as usize,
            blend_pixels,
            box_max: boxes.iter().copied().fold(0.0, f32::max),
            box_mean: backward_pixels / boxes.len().max(1) as f64,
            device: ctx.info().name.clone(),
        },
        &[],
    );
    Ok(())
}
