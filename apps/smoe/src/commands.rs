//! The subcommands' work and their typed records: `kit::emit` prints each record as its
//! text line or, under `--json`, inside the envelope. Every output is checked before any
//! work starts; times are in `*_ms` fields.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use kit::output::{Staged, IMAGE_EXTENSIONS};
use serde::Serialize;
use smoe::cpu::render as cpu;
use smoe::data::Grid;
use smoe::fit::{fit_kernels, FitProgress, FitSettings, Fitted, Init};
use smoe::gpu::{Cull, Mode, RenderSettings, Renderer};
use smoe::model::{Model, MODEL_EXTENSIONS};
use smoe::params::RefineOptions;

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// What `render` writes: an image, or `.npy`.
fn render_extensions() -> Vec<&'static str> {
    IMAGE_EXTENSIONS.iter().copied().chain(["npy"]).collect()
}

/// The size of a render: the model's extent, an exact size, or the extent scaled.
#[derive(Clone, Copy, Debug)]
pub enum OutputSize {
    Extent,
    Exact(u32, u32),
    Scale(f64),
}

/// The largest side a render may have.
const MAX_SIDE: u32 = smoe::model::MAX_EXTENT as u32;

/// The pixel size `size` gives for `model` (validated: its extent is within 1..=16384), or
/// why not; an exact size of another aspect ratio than the model's is rendered stretched,
/// with a warning.
fn output_size(model: &Model, size: OutputSize) -> Result<(u32, u32)> {
    let (ew, eh) = (model.extent[0] as u32, model.extent[1] as u32);
    match size {
        OutputSize::Extent => Ok((ew, eh)),
        OutputSize::Exact(w, h) => {
            let (got, want) = (w as f64 / h as f64, ew as f64 / eh as f64);
            if (got / want - 1.0).abs() > 0.01 {
                kit::report::warn(&format!(
                    "--size {w}x{h} has aspect ratio {got:.3}, the model's {ew}x{eh} {want:.3}: the render is stretched (--scale keeps the ratio)"
                ));
            }
            Ok((w, h))
        }
        OutputSize::Scale(f) => {
            let side = |e: u32| (e as f64 * f).round();
            let (w, h) = (side(ew), side(eh));
            if !(1.0..=MAX_SIDE as f64).contains(&w) || !(1.0..=MAX_SIDE as f64).contains(&h) {
                bail!("--scale {f} of the model's {ew}x{eh} gives {w}x{h}; each side must be 1 to {MAX_SIDE}");
            }
            Ok((w as u32, h as u32))
        }
    }
}

/// The view indices to render: `view` (light fields only, within the captured views) or
/// the centre view.
fn view_position(model: &Model, view: Option<(f64, f64)>) -> Result<[f64; 2]> {
    if model.coord_dims == 2 {
        if view.is_some() {
            bail!("--view applies to light-field models (coord_dims 4); this model is an image");
        }
        return Ok([0.0; 2]);
    }
    let (last_u, last_v) = (model.extent[2] as f64 - 1.0, model.extent[3] as f64 - 1.0);
    let (u, v) = view.unwrap_or((last_u / 2.0, last_v / 2.0));
    if !(0.0..=last_u).contains(&u) || !(0.0..=last_v).contains(&v) {
        bail!("--view {u},{v} is outside the captured views (0 to {last_u}, 0 to {last_v})");
    }
    Ok([u, v])
}

/// Refuses a rendering that holds a non-finite value instead of writing it.
fn check_finite(rgb: &[f32], width: u32) -> Result<()> {
    if let Some(i) = rgb.iter().position(|v| !v.is_finite()) {
        let (px, w) = (i / 3, width as usize);
        bail!("the model renders a non-finite value at pixel ({}, {}); nothing was written", px % w, px / w);
    }
    Ok(())
}

/// Stages RGB f32 pixels as `.npy` (H, W, 3), or as an 8-bit image (clamped, rounded) in
/// the format of the extension.
fn stage_rgb(staged: &mut Staged, path: &Path, format: &str, w: usize, h: usize, rgb: &[f32]) -> Result<()> {
    if format == "npy" {
        kit::npy::stage_f32(staged, path, &[h, w, 3], rgb)?;
    } else {
        let bytes: Vec<u8> = rgb.iter().map(|&v| kit::image::to_u8(v)).collect();
        kit::image::stage(staged, path, w, h, &bytes, kit::image::Layout::Rgb8, kit::image::SaveOptions::default())?;
    }
    Ok(())
}

/// Host bytes per sample of a render at once: the f32 image and its 8-bit copy, and on the
/// CPU the f64 image the f32 one is rounded from.
fn host_bytes_per_sample(on_gpu: bool) -> u64 {
    if on_gpu {
        4 + 1
    } else {
        8 + 4 + 1
    }
}

/// The GPU renderer's settings of `render`.
pub struct GpuRender {
    pub mode: Mode,
    pub cull: Cull,
    /// `None`: the device's tuned block (`kit::tuning`), else the renderer's default.
    pub tile: Option<u32>,
    pub window: f32,
}

#[derive(Serialize)]
struct RenderRecord {
    #[serde(skip)]
    out: PathBuf,
    width: u32,
    height: u32,
    /// Views rendered (1 unless `--views`).
    views: usize,
    kernels: usize,
    /// The GPU's settings and tile-list entries; absent on the CPU, which blends every kernel.
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<Mode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cull: Option<Cull>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tile: Option<u32>,
    /// Where `tile` came from: `option`, `tuning` or `default`.
    #[serde(skip_serializing_if = "Option::is_none")]
    tile_from: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    list_entries: Option<usize>,
    render_ms: f64,
}

impl fmt::Display for RenderRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let views = if self.views > 1 { format!("{} views of ", self.views) } else { String::new() };
        write!(
            f,
            "smoe: rendered {views}{}x{} from {} kernels to {} in {:.1} ms",
            self.width,
            self.height,
            self.kernels,
            self.out.display(),
            self.render_ms
        )
    }
}

/// Where `render` writes: one image (or `.npy`) of one view, or every captured view of a
/// light field as `view_U_V.png` in a folder.
pub enum RenderTarget {
    File { out: PathBuf, view: Option<(f64, f64)> },
    Views(PathBuf),
}

pub fn render(
    model_path: &Path,
    target: RenderTarget,
    size: OutputSize,
    gpu: GpuRender,
    common: &kit::CommonArgs,
) -> Result<()> {
    let format = match &target {
        RenderTarget::File { out, .. } => kit::output::check_file(out, &render_extensions(), &[model_path])?,
        RenderTarget::Views(dir) => {
            kit::output::check_folder(dir, &[model_path])?;
            "png".to_string()
        }
    };
    let model = Model::load(model_path)?;
    let (w, h) = output_size(&model, size)?;
    // Each view as (file, its view indices).
    let views: Vec<(PathBuf, [f64; 2])> = match &target {
        RenderTarget::File { out, view } => vec![(out.clone(), view_position(&model, *view)?)],
        RenderTarget::Views(dir) => {
            if model.coord_dims != 4 {
                bail!("--views writes every view of a light-field model (coord_dims 4); this model is an image");
            }
            let (nu, nv) = (model.extent[2], model.extent[3]);
            let names: Vec<String> = (0..nu * nv).map(|i| format!("view_{}_{}.png", i / nv, i % nv)).collect();
            kit::output::check_files_in(dir, &names.iter().map(String::as_str).collect::<Vec<_>>())?;
            names.iter().enumerate().map(|(i, n)| (dir.join(n), [(i / nv) as f64, (i % nv) as f64])).collect()
        }
    };
    let on_gpu = common.backend == kit::Backend::Gpu;
    kit::budget::elements(&[h as u64, w as u64, 3], host_bytes_per_sample(on_gpu), "the rendered image")?;
    let ctx = common.context()?;
    let tile = ctx.as_ref().map(|ctx| match (gpu.tile, kit::tuning::param(ctx.info(), "smoe.render", "block")) {
        (Some(tile), _) => (tile, "option"),
        (None, Some(tile)) => (tile, "tuning"),
        (None, None) => (RenderSettings::new(w, h).tile, "default"),
    });
    let mut renderer = ctx.as_ref().map(|ctx| Renderer::new(ctx, &model, gpu.mode)).transpose()?;
    let bar = kit::progress::bar(if views.len() > 1 { views.len() as u64 } else { h as u64 }, "render");
    let start = Instant::now();
    let mut staged = Staged::new();
    let mut entries = None;
    for (path, view) in &views {
        let uv = cpu::view_coords(&model, *view);
        let rgb: Vec<f32> = match (renderer.as_mut(), tile) {
            (Some(renderer), Some((tile, _))) => {
                let settings = RenderSettings {
                    uv: [uv[0] as f32, uv[1] as f32],
                    cull: gpu.cull,
                    tile,
                    window: gpu.window,
                    ..RenderSettings::new(w, h)
                };
                let (rgb, n) = renderer.render_rgb(settings)?;
                entries = Some(entries.unwrap_or(0).max(n));
                rgb
            }
            _ => {
                let rows = || {
                    if views.len() == 1 {
                        bar.inc(1)
                    }
                };
                cpu::render_with_progress(&model, w as usize, h as usize, uv, &rows).iter().map(|&v| v as f32).collect()
            }
        };
        check_finite(&rgb, w)?;
        stage_rgb(&mut staged, path, &format, w as usize, h as usize, &rgb)?;
        if views.len() > 1 {
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let render_ms = ms(start);
    staged.commit()?;
    let out = match &target {
        RenderTarget::File { out, .. } => out.clone(),
        RenderTarget::Views(dir) => dir.clone(),
    };
    let record = RenderRecord {
        out: out.clone(),
        width: w,
        height: h,
        views: views.len(),
        kernels: model.len(),
        mode: on_gpu.then_some(gpu.mode),
        cull: on_gpu.then_some(gpu.cull),
        tile: tile.map(|t| t.0),
        tile_from: tile.map(|t| t.1),
        list_entries: entries,
        render_ms,
    };
    kit::emit(&record, &[&out]);
    Ok(())
}

#[derive(Serialize)]
struct ConvertRecord {
    #[serde(skip)]
    out: PathBuf,
    kernels: usize,
    /// `json`, `binary` or `smc`.
    format: &'static str,
    /// The file's length, and per pixel (of every view) in bits.
    bytes: u64,
    bpp: f64,
    /// `.smc`: the step scale (1: the base steps) and the steps per group.
    #[serde(skip_serializing_if = "Option::is_none")]
    step_scale: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    steps: Option<smoe::codec::StepsRecord>,
}

impl fmt::Display for ConvertRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "smoe: converted {} kernels to {} ({}, {} bytes, {:.3} bpp)",
            self.kernels,
            self.out.display(),
            self.format,
            self.bytes,
            self.bpp
        )
    }
}

/// How `convert` sizes a `.smc` output.
pub enum SmcSize {
    /// `--quality`: the steps of [`smoe::codec::Steps::quality_scale`].
    Quality(u32),
    /// `--bpp`: at most this many bits per pixel of every view.
    Bpp(f64),
    /// `--bytes`: at most this many bytes.
    Bytes(usize),
}

pub fn convert(input: &Path, output: &Path, size: Option<SmcSize>) -> Result<()> {
    let format = kit::output::check_file(output, MODEL_EXTENSIONS, &[input])?;
    if size.is_some() && format != "smc" {
        bail!("--quality, --bpp and --bytes apply to .smc outputs; {} is {format}", output.display());
    }
    let model = Model::load(input)?;
    let pixels: u64 = model.extent.iter().map(|&e| e as u64).product();
    let (kernels, step_scale) = if format == "smc" {
        if model.color_space != smoe::model::ColorSpace::Rgb {
            bail!("{}: the .smc format holds RGB models; this one is {}", output.display(), model.color_space.name());
        }
        let params = smoe::params::Params::from_model(&model)?;
        let quality = |q| smoe::codec::Steps::quality_scale(q);
        let (bytes, scale) = match size.unwrap_or(SmcSize::Quality(smoe::codec::DEFAULT_QUALITY)) {
            SmcSize::Quality(q) => (smoe::codec::encode(&params, &smoe::codec::Steps::scaled(quality(q)))?, quality(q)),
            SmcSize::Bpp(bpp) => smc_within(&params, (bpp * pixels as f64 / 8.0).floor() as usize, "--bpp")?,
            SmcSize::Bytes(n) => smc_within(&params, n, "--bytes")?,
        };
        let mut staged = Staged::new();
        staged.write(output, |w| std::io::Write::write_all(w, &bytes))?;
        staged.commit()?;
        (params.len(), Some(scale))
    } else {
        model.save(output)?;
        (model.len(), None)
    };
    let bytes = std::fs::metadata(output).with_context(|| format!("{}", output.display()))?.len();
    let record = ConvertRecord {
        out: output.to_path_buf(),
        kernels,
        format: match format.as_str() {
            "json" => "json",
            "smc" => "smc",
            _ => "binary",
        },
        bytes,
        bpp: bytes as f64 * 8.0 / pixels as f64,
        step_scale,
        steps: step_scale.map(|s| smoe::codec::Steps::scaled(s).record()),
    };
    kit::emit(&record, &[output]);
    Ok(())
}

/// The finest `.smc` encoding of `params` within `budget` bytes, and its step scale.
fn smc_within(params: &smoe::params::Params, budget: usize, flag: &str) -> Result<(Vec<u8>, f64)> {
    match smoe::codec::encode_within(params, budget)? {
        Some(found) => Ok(found),
        None => bail!(
            "{flag}: {} kernels need more than {budget} bytes even at the coarsest steps; fit fewer kernels (smoe fit --bpp chooses them)",
            params.len()
        ),
    }
}

#[derive(Serialize)]
struct ViewRecord {
    frames: u64,
    requested_frames: Option<u64>,
    width: u32,
    height: u32,
    kernels: usize,
}

impl fmt::Display for ViewRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.requested_frames {
            Some(n) => write!(f, "smoe: showed {} of {n} frames", self.frames),
            None => write!(f, "smoe: showed {} frames", self.frames),
        }
    }
}

pub fn view(
    model_path: &Path,
    frames: Option<u64>,
    screenshot: Option<PathBuf>,
    mode: Mode,
    size: Option<(u32, u32)>,
    run: &kit::cli::RunArgs,
) -> Result<()> {
    if let Some(shot) = &screenshot {
        kit::output::check_file(shot, IMAGE_EXTENSIONS, &[model_path])?;
    }
    let model = Model::load(model_path)?;
    let (width, height) = output_size(&model, size.map_or(OutputSize::Extent, |(w, h)| OutputSize::Exact(w, h)))?;
    let kernels = model.len();
    let window = kit::viewer::Options {
        title: "smoe".into(),
        width,
        height,
        frames,
        screenshot: screenshot.clone(),
        device: run.device.clone(),
    };
    let shown = crate::viewer::run(model, mode, window)?;
    let record = ViewRecord {
        frames: shown.frames,
        requested_frames: frames,
        width: shown.width,
        height: shown.height,
        kernels,
    };
    let outs: Vec<&Path> = screenshot.iter().map(PathBuf::as_path).collect();
    kit::emit(&record, &outs);
    Ok(())
}

/// The demo's record, also written as `smoe_summary.json`.
#[derive(Serialize)]
struct DemoRecord {
    #[serde(skip)]
    dir: PathBuf,
    input: &'static str,
    size: [usize; 2],
    kernels: usize,
    iterations: usize,
    refine_steps: usize,
    /// PSNR after EM, and after refinement (the saved model as rendered).
    em_psnr_db: f64,
    psnr_db: f64,
    em_ms: f64,
    refine_ms: f64,
    model: &'static str,
    renders: Vec<String>,
}

impl fmt::Display for DemoRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "smoe: fitted {} kernels to the {}x{} photo {}, PSNR {:.2} dB after EM, {:.2} dB after {} refinement steps; rendered 1x and 2x -> {}",
            self.kernels,
            self.size[0],
            self.size[1],
            DEMO_PHOTO.name,
            self.em_psnr_db,
            self.psnr_db,
            self.refine_steps,
            self.dir.display()
        )
    }
}

/// The demo's photo, the size it is fitted at, and its pixels per kernel (GaussianImage's
/// density on Kodak).
const DEMO_PHOTO: kit::photos::Photo = kit::photos::CHELSEA;
const DEMO_SIZE: (usize, usize) = (180, 120);
const DEMO_PIXELS_PER_KERNEL: usize = 44;

/// The files `smoe demo` writes into its folder.
const DEMO_FILES: [&str; 5] =
    ["smoe_input.png", "smoe_model.json", "smoe_summary.json", "smoe_render_1x.png", "smoe_render_2x.png"];

pub fn demo(dir: &Path, run: &kit::cli::RunArgs) -> Result<()> {
    kit::output::check_folder(dir, &[])?;
    kit::output::check_files_in(dir, &DEMO_FILES)?;
    let ctx = run.context()?;
    let (w, h) = DEMO_SIZE;
    let grid = Grid::from_image(&DEMO_PHOTO.resized(w, h, 3)?);
    let (kernels, iterations) = (w * h / DEMO_PIXELS_PER_KERNEL, 20);
    let settings = FitSettings { iterations, init: Init::Kmeans, refine: RefineOptions { steps: 100, lr: 0.01 } };
    // The fit is most of the demo's seconds.
    let bar = kit::progress::bar((iterations + settings.refine.steps) as u64, "fit");
    let fitted = fit_kernels(Some(&ctx), &grid, kernels, &settings, &mut |e| {
        if !matches!(e, FitProgress::Start { .. }) {
            bar.inc(1);
        }
    })?;
    bar.finish_and_clear();
    let Fitted { model, report, psnr_db, em_psnr_db, refine_ms, .. } = fitted;
    let mut renderer = Renderer::new(&ctx, &model, Mode::Robust)?;
    let mut renders = Vec::new();
    for scale in [1usize, 2] {
        let (rw, rh) = (w * scale, h * scale);
        let (rgb, _) = renderer.render_rgb(RenderSettings::new(rw as u32, rh as u32))?;
        check_finite(&rgb, rw as u32)?;
        renders.push((format!("smoe_render_{scale}x.png"), rw, rh, rgb));
    }
    let record = DemoRecord {
        dir: dir.to_path_buf(),
        input: "smoe_input.png",
        size: [w, h],
        kernels,
        iterations,
        refine_steps: settings.refine.steps,
        em_psnr_db,
        psnr_db,
        em_ms: report.em_ms,
        refine_ms,
        model: "smoe_model.json",
        renders: renders.iter().map(|r| r.0.clone()).collect(),
    };
    let mut names = vec![record.input, record.model, "smoe_summary.json"];
    names.extend(renders.iter().map(|r| r.0.as_str()));
    debug_assert!(names.iter().all(|n| DEMO_FILES.contains(n)), "DEMO_FILES lists {names:?}");
    let mut staged = Staged::new();
    stage_rgb(&mut staged, &dir.join(record.input), "png", w, h, &grid.rgb)?;
    model.stage(&mut staged, &dir.join(record.model))?;
    for (name, rw, rh, rgb) in &renders {
        stage_rgb(&mut staged, &dir.join(name), "png", *rw, *rh, rgb)?;
    }
    staged.write_json(&dir.join("smoe_summary.json"), &record)?;
    staged.commit()?;
    let written: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).collect();
    let outs: Vec<&Path> = written.iter().map(PathBuf::as_path).collect();
    kit::emit(&record, &outs);
    Ok(())
}
