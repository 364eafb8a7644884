//! `lightfield`: train a dictionary ensemble, encode light fields on the GPU (or the CPU
//! reference), decode them, inspect `.lfc` files, generate synthetic light fields, and run
//! the benchmark and the demo. The command line follows docs/cli.md (through `kit`).

mod commands;
mod records;
mod viewer;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use lightfield::codes::MIN_EPSILON;
use lightfield::dictionary::MAX_DICTIONARIES;
use lightfield::patch::PatchShape;
use lightfield::views::Depth;

/// `--json` and `--max-memory` for the commands that read or write files without a GPU.
#[derive(clap::Args, Clone, Debug, Default)]
struct ReportArgs {
    /// Print one JSON object per line (docs/cli.md) instead of text
    #[arg(long)]
    json: bool,
    /// Memory budget for reading inputs, such as 512M or 8G (default: half of physical memory)
    #[arg(long, value_name = "SIZE", value_parser = kit::budget::parse_size)]
    max_memory: Option<u64>,
}

#[derive(Subcommand)]
enum Command {
    /// Train an ensemble of K dictionaries from light fields (.npy or folders of views)
    #[command(after_help = "Examples:\n  lightfield generate --out train.npy --views 8x8 --size 128x128\n  \
        lightfield train --input train.npy --dictionaries 16 --out dict.lfd\n  \
        lightfield train --input train.npy --dictionaries 16 --precluster --out dict.lfd\n  \
        lightfield train --input views/ --grid 8x8 --dictionaries 8 --patch 5x5x8x8 --out dict.lfd --backend cpu")]
    Train {
        /// Training light fields: .npy files of shape (U, V, H, W, 3) or folders of view images (HCI input_CamNNN, Stanford out_YY_XX_*, ROW_COL names; else with --grid)
        #[arg(long, value_name = "PATH", num_args = 1.., required = true)]
        input: Vec<PathBuf>,
        /// Number of dictionaries K in the ensemble
        #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=MAX_DICTIONARIES as i64))]
        dictionaries: u32,
        /// Patch size HxWxUxV: pixel rows, pixel columns, view rows, view columns (each 1..=16)
        #[arg(long, default_value = "5x5x8x8", value_parser = parse_patch)]
        patch: PatchShape,
        /// Output dictionary ensemble (.lfd)
        #[arg(long, value_name = "FILE.lfd")]
        out: PathBuf,
        /// View grid UxV (rows x columns) of folders whose names follow no known layout (read in name order)
        #[arg(long, value_name = "UxV", value_parser = parse_grid)]
        grid: Option<(usize, usize)>,
        /// Assignment and update iterations after the initial HOSVD dictionaries
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=1000))]
        iterations: u32,
        /// RMSE per patch the assignment step encodes at (values in [0, 1])
        #[arg(long, default_value_t = 5e-3, value_parser = parse_epsilon)]
        epsilon: f32,
        /// Most coefficients per patch in the assignment step (default: patch samples / 8)
        #[arg(long, value_name = "T", value_parser = kit::cli::parse_count)]
        sparsity: Option<usize>,
        /// Seed of the random patch split and subset
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Train on a random subset of at most this many patches
        #[arg(long, default_value_t = 50_000, value_parser = kit::cli::parse_count)]
        max_patches: usize,
        /// Start each dictionary from a k-means cluster of the patches (TOG 2019's pre-clustering) instead of a random share
        #[arg(long)]
        precluster: bool,
        #[command(flatten)]
        common: kit::CommonArgs,
    },
    /// Encode a light field into a .lfc file
    #[command(after_help = "Examples:\n  \
        lightfield encode --input scene.npy --dict dict.lfd --sparsity 300 --epsilon 0.005 --out scene.lfc\n  \
        lightfield encode --input views/ --dict dict.lfd --sparsity 600 --bpp 0.3 --out scene.lfc\n  \
        lightfield encode --input views/ --grid 8x8 --dict dict.lfd --sparsity 300 --epsilon 0.01 --out scene.lfc --backend cpu")]
    Encode {
        /// Light field to encode: a .npy of shape (U, V, H, W, 3) (uint8, uint16, or float in [0, 1]) or a folder of view images (HCI input_CamNNN, Stanford out_YY_XX_*, ROW_COL names; else with --grid)
        #[arg(long, value_name = "PATH")]
        input: PathBuf,
        /// Dictionary ensemble (.lfd) made by `lightfield train`
        #[arg(long, value_name = "FILE.lfd")]
        dict: PathBuf,
        /// Most coefficients per patch (T), at most the patch's sample count
        #[arg(long, value_name = "T", value_parser = kit::cli::parse_count)]
        sparsity: usize,
        /// Largest RMSE per patch, values in [0, 1] (at least 0.001)
        #[arg(long, value_parser = parse_epsilon, required_unless_present = "bpp", conflicts_with = "bpp")]
        epsilon: Option<f32>,
        /// Instead of --epsilon: the most bits per pixel the file may take (its bits over views x width x height, dictionaries included); the smallest epsilon found that fits is used
        #[arg(long, value_name = "B", value_parser = parse_bpp)]
        bpp: Option<f64>,
        /// Output compressed light field (.lfc)
        #[arg(long, value_name = "FILE.lfc")]
        out: PathBuf,
        /// View grid UxV (rows x columns) of a folder whose names follow no known layout (read in name order)
        #[arg(long, value_name = "UxV", value_parser = parse_grid)]
        grid: Option<(usize, usize)>,
        /// Fail (exit 1, nothing written) when any patch does not reach --epsilon within the sparsity cap
        #[arg(long)]
        strict: bool,
        #[command(flatten)]
        common: kit::CommonArgs,
    },
    /// Decode a .lfc file to a float32 .npy of shape (U, V, H, W, 3) and/or one PNG per view
    #[command(
        group = clap::ArgGroup::new("outputs").required(true).multiple(true).args(["out", "views"]),
        after_help = "Examples:\n  lightfield decode scene.lfc --out scene.npy\n  \
            lightfield decode scene.lfc --views views/ --depth 16 --backend cpu\n  \
            lightfield decode scene.lfc --view 4,4 --out centre.png"
    )]
    Decode {
        /// Compressed light field (.lfc)
        #[arg(value_name = "FILE.lfc")]
        input: PathBuf,
        /// Output array (.npy, float32, shape (U, V, H, W, 3), samples in [0, 1])
        #[arg(long, value_name = "FILE.npy")]
        out: Option<PathBuf>,
        /// Output folder for one PNG per view, named view_U_V.png (reads back as a folder of views)
        #[arg(long, value_name = "DIR")]
        views: Option<PathBuf>,
        /// Bits per sample of the --views PNGs
        #[arg(long, value_enum, default_value = "8", requires = "views")]
        depth: Depth,
        /// Decode view U,V (row, column) alone, from only the patches that cover it; --out then takes an image (8-bit RGB) or a .npy of shape (H, W, 3)
        #[arg(long, value_name = "U,V", requires = "out", conflicts_with = "views", value_parser = parse_view_index)]
        view: Option<(usize, usize)>,
        #[command(flatten)]
        common: kit::CommonArgs,
    },
    /// Show a compressed light field in a window from any viewpoint (decoded once on the GPU)
    #[command(
        after_help = "Drag with the mouse or press the arrow keys to move between the views, turn the wheel to \
refocus, [ and ] to narrow or widen the aperture, R to reset.\n\nExamples:\n  lightfield view scene.lfc\n  \
lightfield view scene.lfc --aperture 3 --focus 1.5\n  \
lightfield view scene.lfc --frames 10 --screenshot shot.png --view 1.5,2"
    )]
    View {
        /// Compressed light field (.lfc)
        #[arg(value_name = "FILE.lfc")]
        input: PathBuf,
        #[command(flatten)]
        viewpoint: ViewpointArgs,
        /// Render this many frames, then exit
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        frames: Option<u64>,
        /// Save the last frame (needs --frames): .png, .jpg, .tif, .bmp or .webp
        #[arg(long, requires = "frames")]
        screenshot: Option<PathBuf>,
        #[command(flatten)]
        run: kit::cli::RunArgs,
    },
    /// Render one viewpoint of a compressed light field to an image (what `view` shows)
    #[command(after_help = "Examples:\n  lightfield render scene.lfc --view 3.5,4.25 --out still.png\n  \
lightfield render scene.lfc --view 4,4 --focus -1.2 --aperture 4 --out refocused.png --backend cpu")]
    Render {
        /// Compressed light field (.lfc)
        #[arg(value_name = "FILE.lfc")]
        input: PathBuf,
        #[command(flatten)]
        viewpoint: ViewpointArgs,
        /// Output image: .png, .jpg, .tif, .bmp or .webp (8-bit RGB)
        #[arg(long, value_name = "FILE.png")]
        out: PathBuf,
        #[command(flatten)]
        common: kit::CommonArgs,
    },
    /// Print a .lfc file's header and statistics (the same checks as decode)
    #[command(after_help = "Examples:\n  lightfield info scene.lfc\n  lightfield info scene.lfc --json")]
    Info {
        /// Compressed light field (.lfc)
        #[arg(value_name = "FILE.lfc")]
        input: PathBuf,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// Write a synthetic light field (textured planes at several depths) as float32 .npy
    #[command(after_help = "Examples:\n  lightfield generate --out scene.npy\n  \
        lightfield generate --out small.npy --views 5x3 --size 64x48 --seed 7")]
    Generate {
        /// Output array (.npy, float32, shape (U, V, H, W, 3))
        #[arg(long, value_name = "FILE.npy")]
        out: PathBuf,
        /// View grid UxV (rows x columns)
        #[arg(long, value_name = "UxV", default_value = "8x8", value_parser = parse_grid)]
        views: (usize, usize),
        /// Width x height of each view in pixels
        #[arg(long, value_name = "WxH", default_value = "128x128", value_parser = kit::cli::parse_size)]
        size: (u32, u32),
        /// Seed of the scene (planes, textures, depths)
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[command(flatten)]
        report: ReportArgs,
    },
    /// Benchmarks (the paper's Table 1 setting, rate-distortion vs JPEG); JSON lines
    #[command(
        after_help = "Examples:\n  lightfield bench --quick\n  lightfield bench --encode-only --device 0\n  lightfield bench --train-only --json\n  lightfield bench --viewer --json"
    )]
    Bench {
        #[command(flatten)]
        bench: kit::BenchArgs,
        /// Only training and the Table 1 encode/decode (no rate-distortion set)
        #[arg(long, conflicts_with = "train_only")]
        encode_only: bool,
        /// Only the training times (3,200 and 32,000 patches, CPU and GPU, with and without --precluster) and the mode products
        #[arg(long, conflicts_with = "viewer")]
        train_only: bool,
        /// Only the viewer's frame rate: 300 frames of its render path into an offscreen buffer at the Table 1 size (no window)
        #[arg(long, conflicts_with = "encode_only")]
        viewer: bool,
    },
    /// Render two light fields of photo layers, train on one, encode and decode the other; write the centre view (original, decoded), the decoded corner views, the .lfd, .lfc and a JSON summary into DIR
    #[command(
        after_help = "Examples:\n  lightfield demo --out demo/\n  lightfield demo --out demo/ --device llvmpipe --json"
    )]
    Demo {
        /// Output folder: dictionaries.lfd, lightfield.lfc, center_original.png, center_decoded.png, summary.json
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        #[command(flatten)]
        run: kit::cli::RunArgs,
    },
}

/// Where and how a light field is looked at (`view`, `render`).
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct ViewpointArgs {
    /// Viewpoint U,V: view row and column, fractional between the captured views (default: the centre)
    #[arg(long, value_name = "U,V", value_parser = parse_view)]
    view: Option<(f32, f32)>,
    /// Disparity in focus, pixels per view: view (i, j) is sampled at x + D (j - V), y + D (i - U)
    #[arg(long, value_name = "D", default_value_t = 0.0, allow_negative_numbers = true, value_parser = parse_focus)]
    focus: f32,
    /// Radius in views of the blend: 1 interpolates the four nearest views; wider refocuses (shift-and-add)
    #[arg(long, value_name = "R", default_value_t = 1.0, value_parser = parse_aperture)]
    aperture: f32,
    /// Output size WxH (default: the views' size; the window is scaled up to at least 512 pixels)
    #[arg(long, value_name = "WxH", value_parser = kit::cli::parse_size)]
    size: Option<(u32, u32)>,
}

fn parse_view_index(text: &str) -> Result<(usize, usize), String> {
    kit::cli::parse_pair::<usize>(text, ',')
}

fn parse_view(text: &str) -> Result<(f32, f32), String> {
    let (u, v) = kit::cli::parse_pair::<f64>(text, ',')?;
    if !u.is_finite() || !v.is_finite() || u < 0.0 || v < 0.0 || u > 1024.0 || v > 1024.0 {
        return Err(format!("{text:?}: both must be view positions in 0..=1024"));
    }
    Ok((u as f32, v as f32))
}

fn parse_focus(text: &str) -> Result<f32, String> {
    let max = lightfield::render::MAX_FOCUS as f64;
    let d = kit::cli::parse_finite(text)?;
    if d.abs() > max {
        return Err(format!("{d} is not within +-{max}"));
    }
    Ok(d as f32)
}

fn parse_aperture(text: &str) -> Result<f32, String> {
    let max = lightfield::render::MAX_APERTURE as f64;
    let r = kit::cli::parse_finite(text)?;
    if !(1.0..=max).contains(&r) {
        return Err(format!("{r} is not between 1 and {max}"));
    }
    Ok(r as f32)
}

/// A view grid or a count pair `AxB`, each side in 1..=1024.
fn parse_grid(text: &str) -> Result<(usize, usize), String> {
    let (a, b) = kit::cli::parse_pair::<usize>(text, 'x')?;
    if !(1..=1024).contains(&a) || !(1..=1024).contains(&b) {
        return Err(format!("{a}x{b}: each side must be between 1 and 1024"));
    }
    Ok((a, b))
}

fn parse_patch(text: &str) -> Result<PatchShape, String> {
    PatchShape::parse(text).map_err(|e| e.to_string())
}

/// An RMSE bound in [MIN_EPSILON, 1].
fn parse_epsilon(text: &str) -> Result<f32, String> {
    let v = kit::cli::parse_finite(text)?;
    if !(MIN_EPSILON as f64..=1.0).contains(&v) {
        return Err(format!("{v} is not between {MIN_EPSILON} and 1"));
    }
    Ok(v as f32)
}

fn parse_bpp(text: &str) -> Result<f64, String> {
    let v = kit::cli::parse_finite(text)?;
    if v <= 0.0 || v > 64.0 {
        return Err(format!("{v} is not in (0, 64] bits per pixel"));
    }
    Ok(v)
}

fn main() -> ExitCode {
    let app = clap::Command::new("lightfield")
        .about("Dictionary-ensemble light-field codec (train, encode on the GPU, decode)");
    kit::main_subcommands(app, env!("CARGO_PKG_VERSION"), run)
}

fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Train {
            input,
            dictionaries,
            patch,
            out,
            grid,
            iterations,
            epsilon,
            sparsity,
            seed,
            max_patches,
            precluster,
            common,
        } => {
            let params = lightfield::codes::Params { sparsity: sparsity.unwrap_or(patch.len() / 8).max(1), epsilon };
            let opts = lightfield::train::TrainOptions {
                k: dictionaries as usize,
                shape: patch,
                iterations: iterations as usize,
                params,
                seed,
                max_patches,
                precluster,
            };
            commands::train(&input, grid, &out, &opts, &common)
        }
        Command::Encode { input, dict, sparsity, epsilon, bpp, out, grid, strict, common } => {
            let rate = match (epsilon, bpp) {
                (Some(epsilon), _) => commands::Rate::Epsilon(epsilon),
                (None, bpp) => commands::Rate::BitsPerPixel(anyhow::Context::context(bpp, "give --epsilon or --bpp")?),
            };
            commands::encode(&input, grid, &dict, sparsity, rate, &out, strict, &common)
        }
        Command::Decode { input, out, views, depth, view, common } => match (view, out) {
            (Some(view), Some(out)) => commands::decode_view(&input, view, &out, &common),
            (_, out) => commands::decode(&input, out.as_deref(), views.as_deref(), depth, &common),
        },
        Command::View { input, viewpoint, frames, screenshot, run } => {
            commands::view(&input, &viewpoint, frames, screenshot, &run)
        }
        Command::Render { input, viewpoint, out, common } => commands::render(&input, &viewpoint, &out, &common),
        Command::Info { input, report: _ } => commands::info(&input),
        Command::Generate { out, views, size, seed, report: _ } => commands::generate(&out, views, size, seed),
        Command::Bench { bench, encode_only, train_only, viewer } => {
            let set = match (encode_only, train_only, viewer) {
                (_, _, true) => lightfield::bench::Set::Viewer,
                (_, true, _) => lightfield::bench::Set::TrainOnly,
                (true, _, _) => lightfield::bench::Set::EncodeOnly,
                _ => lightfield::bench::Set::All,
            };
            Ok(lightfield::bench::run(bench.quick, set, &bench.device, |v| kit::emit(&kit::report::Fields(v), &[]))?)
        }
        Command::Demo { out, run } => commands::demo(&out, &run),
    }
}
