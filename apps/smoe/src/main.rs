//! `smoe`: fit, render, convert and view Steered Mixture-of-Experts models; `bench` and
//! `demo` for the benchmark run and the main-job demo. The edges (errors, outputs checked
//! before work, the JSON envelope, progress) are `kit`'s (docs/cli.md).

mod bench;
mod commands;
mod fit_budget;
mod fit_command;
mod viewer;

use std::path::PathBuf;

use anyhow::Result;
use clap::Subcommand;
use fit_command::Kernels;
use smoe::fit::{FitSettings, Init};
use smoe::gpu::{Cull, Mode};
use smoe::params::RefineOptions;

#[derive(Subcommand)]
enum Command {
    /// Render a view of a model to an image (8-bit RGB) or .npy (float32, H x W x 3)
    #[command(
        after_help = "Examples:\n  smoe render photo.json --out photo.png\n  smoe render photo.json --out big.png --scale 2\n  smoe render lf.smoe --out view.npy --view 1.5,2 --backend cpu\n  smoe render lf.smc --views views/"
    )]
    Render {
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
    },
    /// Fit a model to an image or a light field (.npy, shape U x V x H x W x 3): EM, then gradient descent on the rendered error
    #[command(
        after_help = "Examples:\n  smoe fit photo.png --kernels 2000 --out photo.json\n  smoe fit lf.npy --kernels 500 --iterations 20 --out lf.smoe --backend cpu\n  smoe fit photo.png --kernels 9000 --refine-steps 0 --out em-only.smoe\n  smoe fit photo.png --psnr 32 --out q32.smoe\n  smoe fit photo.png --bpp 0.5 --out photo.smc"
    )]
    Fit {
        /// The input: an image (PNG, JPEG, TIFF, WebP or BMP) or a light field .npy (U, V, H, W, 3): float32/float64 in [0, 1], or uint8/uint16 scaled to it
        input: PathBuf,
        /// Number of kernels K (at most the number of samples, and 2^24); with --psnr, --bpp or --bytes, the most the search may use (default: a quarter of the samples)
        #[arg(long, value_parser = parse_kernels, required_unless_present_any = ["psnr", "bpp", "bytes"])]
        kernels: Option<usize>,
        /// Fit to a quality instead of a count: the smallest K (within 10%) whose fit reaches this PSNR in dB, 1..=100, found by fits at doubling K, then halving the gap
        #[arg(long, value_parser = parse_psnr, conflicts_with_all = ["bpp", "bytes"])]
        psnr: Option<f64>,
        /// Fit to a file size instead: the .smc file (--out must end in .smc) of the smallest error within this many bits per pixel (of every view), in (0, 64]; the kernel count and the quantisation are searched
        #[arg(long, value_parser = parse_bpp, conflicts_with = "bytes")]
        bpp: Option<f64>,
        /// Like --bpp, a budget in bytes
        #[arg(long, value_parser = kit::cli::parse_count)]
        bytes: Option<usize>,
        /// --bpp/--bytes: fits of the kernel-count search (each at 1.5x or 1/1.5x the best so far), 1..=20
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
        budget_fits: u32,
        /// --bpp/--bytes: steps of refinement with the quantiser in the loop (loss and gradient of the quantised model, applied to the unquantised one) after each fit, 0..=100000
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(0..=100_000))]
        qat_steps: u32,
        /// The model file: .json, or the binary format for .smoe/.bin
        #[arg(long)]
        out: PathBuf,
        /// EM iterations, 1..=100000
        #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        iterations: u32,
        /// Starting kernels
        #[arg(long, value_enum, default_value_t = Init::Kmeans)]
        init: Init,
        /// Steps of gradient descent (Adam) on the rendered image's error after EM, 0..=100000; 0 switches refinement off
        #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(0..=100_000))]
        refine_steps: u32,
        /// Refinement's learning rate (centres move up to 20x this in pixels per step), in (0, 1]
        #[arg(long, default_value_t = 0.01, value_parser = parse_rate)]
        refine_lr: f64,
        #[command(flatten)]
        common: kit::CommonArgs,
    },
    /// Open a window and render the model every frame; the mouse moves the view of a light field
    #[command(
        after_help = "Examples:\n  smoe view photo.json\n  smoe view photo.json --frames 60 --screenshot shot.png"
    )]
    View {
        /// The model (.json, .smoe, .bin or .smc)
        model: PathBuf,
        /// Render this many frames, then exit
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        frames: Option<u64>,
        /// Save the last frame (needs --frames): .png, .jpg, .tif, .bmp or .webp
        #[arg(long, requires = "frames")]
        screenshot: Option<PathBuf>,
        /// How the GPU evaluates each kernel
        #[arg(long, value_enum, default_value_t = Mode::Robust)]
        mode: Mode,
        /// Window size WxH, each side 1..=16384 (default: the model's extent)
        #[arg(long, value_parser = kit::cli::parse_size)]
        size: Option<(u32, u32)>,
        #[command(flatten)]
        run: kit::cli::RunArgs,
    },
    /// Convert between the JSON, binary (.smoe/.bin) and compact (.smc) model formats (format from the extension)
    #[command(
        after_help = "Examples:\n  smoe convert photo.json photo.smoe\n  smoe convert photo.smoe photo.json\n  smoe convert photo.smoe photo.smc --quality 80\n  smoe convert photo.smoe photo.smc --bpp 0.5"
    )]
    Convert {
        /// The model to read (.json, .smoe, .bin or .smc; told apart by content)
        input: PathBuf,
        /// The model to write: .json (JSON), .smoe/.bin (binary, f32 values) or .smc (quantised, entropy coded)
        output: PathBuf,
        /// .smc: the quantisation, 1..=100 (every 10 more halves every step; default 75)
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100), conflicts_with_all = ["bpp", "bytes"])]
        quality: Option<u32>,
        /// .smc: the finest quantisation whose file is at most this many bits per pixel (of every view), in (0, 64]
        #[arg(long, value_parser = parse_bpp, conflicts_with = "bytes")]
        bpp: Option<f64>,
        /// .smc: the finest quantisation whose file is at most this many bytes
        #[arg(long, value_parser = kit::cli::parse_count)]
        bytes: Option<usize>,
        /// Print one JSON object per line (docs/cli.md) instead of text
        #[arg(long)]
        json: bool,
        /// Memory budget for reading inputs, such as 512M or 8G (default: half of physical memory)
        #[arg(long, value_name = "SIZE", value_parser = kit::budget::parse_size)]
        max_memory: Option<u64>,
    },
    /// Benchmarks: the paper's Table 4 and fitting (one JSON object per line)
    #[command(after_help = "Examples:\n  smoe bench --quick\n  smoe bench --set render --device 0")]
    Bench {
        #[command(flatten)]
        args: kit::BenchArgs,
        /// Which measurements: all, render (Table 4 and the tile-list build alone) or fit
        #[arg(long, value_enum, default_value_t = bench::Set::All)]
        set: bench::Set,
    },
    /// Fit a sample photo (EM and refinement), render it at 1x and 2x, write everything to DIR
    #[command(after_help = "Examples:\n  smoe demo --out demo/")]
    Demo {
        /// The folder to write (created if missing): smoe_input.png, smoe_model.json, two renders, smoe_summary.json
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        run: kit::cli::RunArgs,
    },
}

/// The learning rate of quantisation-aware refinement: a third of refinement's default, as
/// it starts from a refined model.
const QAT_LR: f64 = 0.003;

fn parse_view(text: &str) -> Result<(f64, f64), String> {
    let (u, v) = kit::cli::parse_pair::<f64>(text, ',')?;
    if !u.is_finite() || !v.is_finite() {
        return Err(format!("{text:?}: the view position must be finite"));
    }
    Ok((u, v))
}

fn parse_scale(text: &str) -> Result<f64, String> {
    let v = kit::cli::parse_finite(text)?;
    if !(v > 0.0 && v <= 16384.0) {
        return Err(format!("{v} is not a scale in (0, 16384]"));
    }
    Ok(v)
}

fn parse_window(text: &str) -> Result<f32, String> {
    let v = kit::cli::parse_finite(text)?;
    if !(0.0..=16384.0).contains(&v) {
        return Err(format!("{v} is not between 0 and 16384 pixels"));
    }
    Ok(v as f32)
}

fn parse_rate(text: &str) -> Result<f64, String> {
    let v = kit::cli::parse_finite(text)?;
    if !(v > 0.0 && v <= 1.0) {
        return Err(format!("{v} is not in (0, 1]"));
    }
    Ok(v)
}

fn parse_psnr(text: &str) -> Result<f64, String> {
    let v = kit::cli::parse_finite(text)?;
    if !(1.0..=100.0).contains(&v) {
        return Err(format!("{v} dB is not in 1..=100"));
    }
    Ok(v)
}

fn parse_bpp(text: &str) -> Result<f64, String> {
    let v = kit::cli::parse_finite(text)?;
    if !(v > 0.0 && v <= 64.0) {
        return Err(format!("{v} bits per pixel is not in (0, 64]"));
    }
    Ok(v)
}

fn parse_kernels(text: &str) -> Result<usize, String> {
    let k = kit::cli::parse_count(text)?;
    if k as u64 > smoe::model::MAX_KERNELS {
        return Err(format!("{k} kernels; a model holds at most {}", smoe::model::MAX_KERNELS));
    }
    Ok(k)
}

fn main() -> std::process::ExitCode {
    let app = clap::Command::new("smoe")
        .about("Steered Mixture-of-Experts: fit, render, convert and view models")
        .after_help("Examples:\n  smoe fit photo.png --kernels 2000 --out photo.json\n  smoe render photo.json --out big.png --size 3840x2160\n  smoe convert photo.json photo.smoe");
    kit::main_subcommands(app, env!("CARGO_PKG_VERSION"), run)
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Render { model, out, views, size, scale, view, mode, cull, tile, window, common } => {
            let gpu = commands::GpuRender { mode, cull, tile, window };
            let size = match (size, scale) {
                (Some((w, h)), _) => commands::OutputSize::Exact(w, h),
                (None, Some(f)) => commands::OutputSize::Scale(f),
                (None, None) => commands::OutputSize::Extent,
            };
            let target = match (views, out) {
                (Some(dir), _) => commands::RenderTarget::Views(dir),
                (None, Some(out)) => commands::RenderTarget::File { out, view },
                (None, None) => anyhow::bail!("--out FILE or --views DIR is needed"),
            };
            commands::render(&model, target, size, gpu, &common)
        }
        Command::Fit {
            input,
            kernels,
            psnr,
            bpp,
            bytes,
            budget_fits,
            qat_steps,
            out,
            iterations,
            init,
            refine_steps,
            refine_lr,
            common,
        } => {
            let refine = RefineOptions { steps: refine_steps as usize, lr: refine_lr };
            let budget = match (bpp, bytes) {
                (Some(b), _) => Some(fit_budget::Budget::Bpp(b)),
                (_, Some(n)) => Some(fit_budget::Budget::Bytes(n)),
                _ => None,
            };
            if let Some(budget) = budget {
                let settings = FitSettings { iterations: iterations as usize, init, refine };
                let budget = fit_budget::BudgetSettings {
                    budget,
                    max_kernels: kernels,
                    trials: budget_fits as usize,
                    qat: RefineOptions { steps: qat_steps as usize, lr: QAT_LR },
                };
                return fit_budget::fit(&input, &out, settings, budget, &common);
            }
            let kernels = match (psnr, kernels) {
                (Some(db), max) => Kernels::Psnr { db, max },
                (None, k) => Kernels::Count(k.ok_or_else(|| anyhow::anyhow!("--kernels or --psnr is needed"))?),
            };
            let settings = FitSettings { iterations: iterations as usize, init, refine };
            fit_command::fit(&input, kernels, &out, settings, &common)
        }
        Command::View { model, frames, screenshot, mode, size, run } => {
            commands::view(&model, frames, screenshot, mode, size, &run)
        }
        Command::Convert { input, output, quality, bpp, bytes, .. } => {
            let size = match (quality, bpp, bytes) {
                (Some(q), ..) => Some(commands::SmcSize::Quality(q)),
                (_, Some(b), _) => Some(commands::SmcSize::Bpp(b)),
                (.., Some(n)) => Some(commands::SmcSize::Bytes(n)),
                _ => None,
            };
            commands::convert(&input, &output, size)
        }
        Command::Bench { args, set } => bench::run(&kit::cli::open(&args.device)?, args.quick, set),
        Command::Demo { out, run } => commands::demo(&out, &run),
    }
}
