//! `smoe`: fit, render, convert and view Steered Mixture-of-Experts models; `bench` and
//! `demo` for the benchmark run and the main-job demo.

mod bench;
mod viewer;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use clap::{Parser, Subcommand};
use engine::cli::{print_json, Backend, CommonArgs};
use serde_json::json;
use smoe::data::{sample_image, Grid};
use smoe::fit::{fit_gpu, fit_gpu_from, render_psnr, Init};
use smoe::gpu::{Cull, Mode, RenderSettings, Renderer};
use smoe::model::Model;
use smoe::reference;

#[derive(Parser)]
#[command(name = "smoe", version, about = "Steered Mixture-of-Experts: fit, render and view models")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Render a view of a model to PNG (8-bit RGB) or .npy (float32, H x W x 3)
    Render {
        model: PathBuf,
        #[arg(long)]
        out: PathBuf,
        /// Output size WxH (default: the model's extent); the model is sampled at the new pixel centres
        #[arg(long)]
        size: Option<String>,
        /// View position U,V for light fields (view indices, fractional allowed; default: centre)
        #[arg(long)]
        view: Option<String>,
        #[arg(long, value_enum, default_value_t = Mode::Robust)]
        mode: Mode,
        /// Kernel selection per tile
        #[arg(long, value_enum, default_value_t = Cull::Exact)]
        cull: Cull,
        /// Tile (block) edge in pixels
        #[arg(long, default_value_t = 16)]
        tile: u32,
        /// Relevance-window border in pixels (--cull window)
        #[arg(long, default_value_t = 32.0)]
        window: f32,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Fit a model to an image or a light field (.npy, shape U x V x H x W x 3) with EM on the GPU
    Fit {
        input: PathBuf,
        #[arg(long)]
        kernels: usize,
        /// Model file: .json, or the binary format for .smoe/.bin
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 40)]
        iterations: usize,
        /// Starting kernels: kmeans (k-means++ and Lloyd on the joint samples) or grid
        #[arg(long, default_value = "kmeans")]
        init: Init,
        #[arg(long)]
        device: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Open a window and render the model every frame; the mouse moves the view of a light field
    View {
        model: PathBuf,
        /// Render this many frames, then exit
        #[arg(long)]
        frames: Option<u64>,
        /// Save the last frame as PNG (with --frames)
        #[arg(long)]
        screenshot: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = Mode::Robust)]
        mode: Mode,
        /// Window size WxH (default: the model's extent)
        #[arg(long)]
        size: Option<String>,
        #[arg(long)]
        device: Option<String>,
    },
    /// Convert between the JSON and binary (.smoe/.bin) model formats
    Convert { input: PathBuf, output: PathBuf },
    /// Benchmarks: the paper's Table 4 and fitting (JSON lines)
    Bench(engine::cli::BenchArgs),
    /// Generate a sample image, fit it, render at 1x and 2x, write everything to DIR
    Demo {
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        device: Option<String>,
    },
}

fn main() {
    if let Err(e) = run(Cli::parse()) {
        eprintln!("smoe: error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Render { model, out, size, view, mode, cull, tile, window, common } => {
            render(&model, &out, size.as_deref(), view.as_deref(), mode, cull, tile, window, &common)
        }
        Command::Fit { input, kernels, out, iterations, init, device, json } => {
            fit(&input, kernels, &out, iterations, init, device.as_deref(), json)
        }
        Command::View { model, frames, screenshot, mode, size, device } => {
            let m = Model::load(&model)?;
            let (w, h) = output_size(&m, size.as_deref())?;
            if let Some(s) = &screenshot {
                engine::io::check_not_input(s, &[&model])?;
                if frames.is_none() {
                    bail!("--screenshot needs --frames N");
                }
            }
            viewer::run(viewer::Options { model: m, mode, width: w, height: h, frames, screenshot, device })
        }
        Command::Convert { input, output } => {
            engine::io::check_not_input(&output, &[&input])?;
            let m = Model::load(&input)?;
            m.save(&output)?;
            println!("smoe: converted {} kernels to {}", m.len(), output.display());
            Ok(())
        }
        Command::Bench(engine::cli::BenchArgs { quick, device }) => {
            let ctx = engine::Context::open(device.as_deref())?;
            bench::run(&ctx, quick)
        }
        Command::Demo { out, device } => demo(&out, device.as_deref()),
    }
}

fn parse_pair<T: std::str::FromStr>(text: &str, sep: char, what: &str) -> Result<(T, T)> {
    let parts: Vec<&str> = text.split(sep).collect();
    if parts.len() == 2 {
        if let (Ok(a), Ok(b)) = (parts[0].trim().parse(), parts[1].trim().parse()) {
            return Ok((a, b));
        }
    }
    bail!("{what} must look like A{sep}B, got {text:?}")
}

fn output_size(model: &Model, size: Option<&str>) -> Result<(u32, u32)> {
    let (w, h) = match size {
        Some(s) => parse_pair::<u32>(s, 'x', "--size")?,
        None => (model.extent[0] as u32, model.extent[1] as u32),
    };
    if w == 0 || h == 0 || w > 16384 || h > 16384 {
        bail!("--size must be between 1x1 and 16384x16384, got {w}x{h}");
    }
    Ok((w, h))
}

fn view_position(model: &Model, view: Option<&str>) -> Result<[f64; 2]> {
    if model.coord_dims == 2 {
        if view.is_some() {
            bail!("--view applies to light-field models (coord_dims 4); this model is an image");
        }
        return Ok([0.0; 2]);
    }
    let (u, v) = match view {
        Some(s) => parse_pair::<f64>(s, ',', "--view")?,
        None => ((model.extent[2] as f64 - 1.0) / 2.0, (model.extent[3] as f64 - 1.0) / 2.0),
    };
    if !u.is_finite() || !v.is_finite() {
        bail!("--view must be finite");
    }
    Ok([u, v])
}

/// Writes RGB f32 pixels as PNG (clamped, rounded) or .npy (H, W, 3).
fn write_image(path: &Path, w: usize, h: usize, rgb: &[f32]) -> Result<()> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("png") => {
            let bytes: Vec<u8> = rgb.iter().map(|&v| engine::io::to_u8(v)).collect();
            engine::io::save_png_rgb8(path, w, h, &bytes)?;
        }
        Some("npy") => engine::io::write_npy_f32(path, &[h, w, 3], rgb)?,
        _ => bail!("{}: output must end in .png or .npy", path.display()),
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn render(
    model_path: &Path,
    out: &Path,
    size: Option<&str>,
    view: Option<&str>,
    mode: Mode,
    cull: Cull,
    tile: u32,
    window: f32,
    common: &CommonArgs,
) -> Result<()> {
    engine::io::check_not_input(out, &[model_path])?;
    if !matches!(out.extension().and_then(|e| e.to_str()), Some("png" | "npy")) {
        bail!("{}: output must end in .png or .npy", out.display());
    }
    if tile == 0 || tile > 1024 {
        bail!("--tile must be between 1 and 1024");
    }
    let model = Model::load(model_path)?;
    let (w, h) = output_size(&model, size)?;
    let uv = reference::view_coords(&model, view_position(&model, view)?);
    let start = Instant::now();
    let (rgb, entries) = match common.backend {
        Backend::Cpu => {
            let rgb = reference::render(&model, w as usize, h as usize, uv);
            (rgb.iter().map(|&v| v as f32).collect(), 0)
        }
        Backend::Gpu => {
            let ctx = engine::Context::open(common.device.as_deref())?;
            let mut renderer = Renderer::new(&ctx, &model, mode)?;
            let settings =
                RenderSettings { uv: [uv[0] as f32, uv[1] as f32], cull, tile, window, ..RenderSettings::new(w, h) };
            renderer.render_rgb(settings)?
        }
    };
    let ms = start.elapsed().as_secs_f64() * 1e3;
    write_image(out, w as usize, h as usize, &rgb)?;
    if common.json {
        print_json(&json!({
            "command": "render", "out": out, "width": w, "height": h, "kernels": model.len(),
            "backend": common.backend, "mode": mode, "cull": cull, "tile": tile, "list_entries": entries, "ms": ms,
        }));
    } else {
        println!("smoe: rendered {w}x{h} from {} kernels to {} in {ms:.1} ms", model.len(), out.display());
    }
    Ok(())
}

fn fit(
    input: &Path,
    kernels: usize,
    out: &Path,
    iterations: usize,
    init: Init,
    device: Option<&str>,
    json: bool,
) -> Result<()> {
    engine::io::check_not_input(out, &[input])?;
    if kernels == 0 {
        bail!("--kernels must be at least 1");
    }
    if iterations == 0 {
        bail!("--iterations must be at least 1");
    }
    let grid = Grid::load(input)?;
    if kernels > grid.len() {
        bail!("--kernels {kernels} is more than the {} samples of {}", grid.len(), input.display());
    }
    let ctx = engine::Context::open(device)?;
    let bar = engine::cli::progress(iterations as u64, "EM", json);
    let t = std::time::Instant::now();
    let start = init.model(&grid, kernels);
    let init_ms = t.elapsed().as_secs_f64() * 1e3;
    let (model, report) = fit_gpu_from(&ctx, &grid, start, iterations, |_, ll| {
        bar.set_message(format!("ll {ll:.3}"));
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    model.validate().context("the fit produced an invalid model")?;
    let quality = render_psnr(&ctx, &model, &grid)?;
    model.save(out)?;
    if json {
        print_json(&json!({
            "command": "fit", "out": out, "kernels": kernels, "samples": report.samples,
            "iterations": iterations, "psnr_db": quality, "loglik": report.loglik.last(),
            "gpu_ms": report.gpu_ms, "wall_ms": report.wall_ms, "init": format!("{init:?}").to_lowercase(),
            "init_ms": init_ms,
        }));
    } else {
        println!(
            "smoe: fitted {kernels} kernels to {} samples in {iterations} iterations ({:.0} ms after a {init_ms:.0} ms {init:?} init), PSNR {quality:.2} dB -> {}",
            report.samples,
            report.wall_ms,
            out.display()
        );
    }
    Ok(())
}

fn demo(dir: &Path, device: Option<&str>) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let start = Instant::now();
    let (w, h, k, iterations) = (96usize, 64usize, 160usize, 20usize);
    let grid = sample_image(w, h);
    let to_bytes = |v: &[f32]| v.iter().map(|&x| engine::io::to_u8(x)).collect::<Vec<u8>>();
    engine::io::save_png_rgb8(&dir.join("smoe_input.png"), w, h, &to_bytes(&grid.rgb))?;
    let ctx = engine::Context::open(device)?;
    let (model, report) = fit_gpu(&ctx, &grid, k, iterations, |_, _| {})?;
    model.validate()?;
    let quality = render_psnr(&ctx, &model, &grid)?;
    model.save(&dir.join("smoe_model.json"))?;
    let mut renderer = Renderer::new(&ctx, &model, Mode::Robust)?;
    let mut outputs = Vec::new();
    for scale in [1usize, 2] {
        let (rw, rh) = (w * scale, h * scale);
        let (rgb, _) = renderer.render_rgb(RenderSettings::new(rw as u32, rh as u32))?;
        let name = format!("smoe_render_{scale}x.png");
        write_image(&dir.join(&name), rw, rh, &rgb)?;
        outputs.push(name);
    }
    let summary = json!({
        "app": "smoe", "input": "smoe_input.png", "size": [w, h], "kernels": k, "iterations": iterations,
        "psnr_db": quality, "fit_ms": report.wall_ms, "model": "smoe_model.json", "renders": outputs,
        "seconds": start.elapsed().as_secs_f64(),
    });
    let text = serde_json::to_string_pretty(&summary)?;
    engine::io::write_atomic(&dir.join("smoe_summary.json"), |f| {
        use std::io::Write;
        f.write_all(text.as_bytes()).map_err(|e| engine::EngineError::InvalidInput(e.to_string()))
    })?;
    println!(
        "smoe: fitted {k} kernels to a {w}x{h} sample image, PSNR {quality:.2} dB, rendered 1x and 2x -> {}",
        dir.display()
    );
    Ok(())
}
