//! `smoe render`: a view of a model (or every captured view of a light field) to an image
//! or `.npy`, on the GPU (tile lists, culled or windowed) or the CPU (every kernel).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use kit::output::{Staged, IMAGE_EXTENSIONS};
use kit::stats::ms_since;
use serde::Serialize;
use smoe::cpu::render as cpu;
use smoe::gpu::{Cull, Mode, RenderSettings, Renderer};
use smoe::model::Model;

use super::{check_finite, output_size, parse_within, stage_rgb, OutputSize};

#[derive(Args)]
pub struct RenderArgs {
    /// The model (.json, .smoe, .bin or .smc; told apart by content)
    model: PathBuf,
    /// Output: .png, .jpg, .tif, .bmp or .webp (8-bit RGB), or .npy (float32, unclamped)
    #[arg(long, required_unless_present = "views")]
    out: Option<PathBuf>,
    /// Light fields: every captured view into this folder as view_U_V.png (instead of --out)
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "view"])]
    views: Option<PathBuf>,
    /// Output size WxH, each side 1..=16384 (default: the model's extent); the model is sampled at the new pixel centres, stretched (with a warning) where the aspect ratio differs from the model's
    #[arg(long, value_parser = kit::cli::parse_size)]
    size: Option<(u32, u32)>,
    /// Output size as the model's extent times F (e.g. 2 for twice the width and height), keeping its aspect ratio
    #[arg(long, value_name = "F", conflicts_with = "size", value_parser = parse_scale)]
    scale: Option<f64>,
    /// View position U,V for light fields: view indices, fractional allowed, within the captured views (default: centre)
    #[arg(long, value_parser = parse_view)]
    view: Option<(f64, f64)>,
    /// How the GPU evaluates each kernel (ignored by --backend cpu)
    #[arg(long, value_enum, default_value_t = Mode::Robust)]
    mode: Mode,
    /// Kernel selection per tile (ignored by --backend cpu, which blends every kernel)
    #[arg(long, value_enum, default_value_t = Cull::Exact)]
    cull: Cull,
    /// Tile (block) edge in pixels, 1..=1024 (default: the device's tuned `smoe.render` block,
    /// which `gpu-info` shows, else 16)
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    tile: Option<u32>,
    /// Relevance-window border in pixels, 0..=16384 (--cull window)
    #[arg(long, default_value_t = 32.0, value_parser = parse_window)]
    window: f32,
    #[command(flatten)]
    common: kit::CommonArgs,
}

fn parse_view(text: &str) -> Result<(f64, f64), String> {
    let (u, v) = kit::cli::parse_pair::<f64>(text, ',')?;
    if !u.is_finite() || !v.is_finite() {
        return Err(format!("{text:?}: the view position must be finite"));
    }
    Ok((u, v))
}

fn parse_scale(text: &str) -> Result<f64, String> {
    parse_within(text, |v| v > 0.0 && v <= 16384.0, |v| format!("{v} is not a scale in (0, 16384]"))
}

fn parse_window(text: &str) -> Result<f32, String> {
    let v = parse_within(text, |v| (0.0..=16384.0).contains(&v), |v| format!("{v} is not between 0 and 16384 pixels"))?;
    Ok(v as f32)
}

pub fn run(args: RenderArgs) -> Result<()> {
    let RenderArgs { model, out, views, size, scale, view, mode, cull, tile, window, common } = args;
    let gpu = GpuRender { mode, cull, tile, window };
    let size = match (size, scale) {
        (Some((w, h)), _) => OutputSize::Exact(w, h),
        (None, Some(f)) => OutputSize::Scale(f),
        (None, None) => OutputSize::Extent,
    };
    let target = match (views, out) {
        (Some(dir), _) => RenderTarget::Views(dir),
        (None, Some(out)) => RenderTarget::File { out, view },
        (None, None) => bail!("--out FILE or --views DIR is needed"),
    };
    render(&model, target, size, gpu, &common)
}

/// What `render` writes: an image, or `.npy`.
fn render_extensions() -> Vec<&'static str> {
    IMAGE_EXTENSIONS.iter().copied().chain(["npy"]).collect()
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
struct GpuRender {
    mode: Mode,
    cull: Cull,
    /// `None`: the device's tuned block (`kit::tuning`), else the renderer's default.
    tile: Option<u32>,
    window: f32,
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
enum RenderTarget {
    File { out: PathBuf, view: Option<(f64, f64)> },
    Views(PathBuf),
}

fn render(
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
    let render_ms = ms_since(start);
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
