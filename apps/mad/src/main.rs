//! `mad`: the Most Apparent Distortion image quality metric on the command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};
use kit::CommonArgs;
use mad::gpu::GpuMad;
use mad::report::ScoreReport;

#[derive(Parser)]
#[command(
    name = "mad",
    version,
    propagate_version = true,
    about = "The Most Apparent Distortion image quality metric (Larson & Chandler 2010), exact, on the GPU"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Score one pair: a reference image and a distorted version of it
    #[command(after_help = "Examples:\n  \
        mad score ref.png dist.jpg\n  \
        mad score ref.png dist.png --maps maps/ --json\n  \
        mad score ref.tif dist.tif --backend cpu")]
    Score {
        /// The reference image (PNG, JPEG, TIFF, WebP or BMP; 8/16-bit; gray or RGB; at least 34x34)
        reference: PathBuf,
        /// The distorted image, the same size as the reference
        distorted: PathBuf,
        /// Write the detection, appearance and combined maps into this folder (NAME.png with a
        /// colour scale and NAME.npy, all six or none)
        #[arg(long, value_name = "DIR")]
        maps: Option<PathBuf>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Score every `ref,dist` line of a CSV, one line per pair in CSV order
    #[command(after_help = "Examples:\n  \
        mad batch --pairs pairs.csv\n  \
        mad batch --pairs pairs.csv --json --device all\n  \
        mad batch --pairs pairs.csv --backend cpu\n\n\
        A pair that cannot be scored gets a line with its error; the batch goes on and exits 1.")]
    Batch {
        /// CSV of `ref,dist` lines (UTF-8, paths relative to the CSV's folder; a first line
        /// `ref,dist` is a header, `#` starts a comment)
        #[arg(long, value_name = "CSV")]
        pairs: PathBuf,
        /// Pairs per GPU chunk (default: about 64 MiB of spectra per chunk, fewer for a short
        /// batch). With `--device all` or a list such as `0,1` the pairs are split across those GPUs
        #[arg(long, value_name = "N", value_parser = kit::cli::parse_count)]
        chunk: Option<usize>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// The benchmark set (512x512 latency, 1000-pair throughput, 1920x1080), one JSON line each
    #[command(after_help = "Examples:\n  mad bench\n  mad bench --quick --device 0")]
    Bench {
        #[command(flatten)]
        args: kit::BenchArgs,
        /// Print each measurement in the JSON envelope (docs/cli.md) instead of its bare fields
        #[arg(long)]
        json: bool,
    },
    /// Generate a sample scene and distortions, score them, write images, maps and a JSON summary
    #[command(after_help = "Examples:\n  mad demo --out demo/\n  mad demo --out demo/ --backend cpu --json")]
    Demo {
        /// The folder to write into (created if missing)
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        #[command(flatten)]
        common: CommonArgs,
    },
}

/// The MAD pipelines on the `--device` GPU, or `None` on the CPU backend.
fn open_gpu(common: &CommonArgs) -> Result<Option<GpuMad>> {
    Ok(match common.context()? {
        Some(ctx) => Some(GpuMad::new(&ctx)?),
        None => None,
    })
}

fn score(reference: &Path, distorted: &Path, maps_dir: Option<&Path>, common: &CommonArgs) -> Result<()> {
    if let Some(dir) = maps_dir {
        mad::maps::check(dir, &[reference, distorted])?;
    }
    let gpu = open_gpu(common)?;
    let want_maps = maps_dir.is_some();
    let (r, d) = mad::input::load_pair(reference, distorted, |w, h| match &gpu {
        Some(gpu) => gpu.check_budget(w, h, 1, 1, want_maps),
        None => mad::cpu::check_budget(w, h),
    })?;
    let (scores, maps) = match &gpu {
        Some(gpu) => gpu.score(&r, &d, want_maps)?,
        None => {
            let (s, m) = mad::cpu::score(&r, &d)?;
            (s, want_maps.then_some(m))
        }
    };
    if let (Some(dir), Some(maps)) = (maps_dir, &maps) {
        mad::maps::write_maps(dir, maps)?;
    }
    let outs: Vec<&Path> = maps_dir.into_iter().collect();
    kit::emit(&ScoreReport { scores, width: r.width, height: r.height }, &outs);
    Ok(())
}

fn batch(csv: &Path, chunk: Option<usize>, common: &CommonArgs) -> Result<()> {
    let gpus = match common.backend {
        kit::Backend::Gpu => {
            kit::cli::open_each(common.device())?.iter().map(GpuMad::new).collect::<Result<Vec<_>, _>>()?
        }
        kit::Backend::Cpu => Vec::new(),
    };
    Ok(mad::batch::run(csv, chunk, gpus)?)
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Score { reference, distorted, maps, common } => {
            score(&reference, &distorted, maps.as_deref(), &common)
        }
        Command::Batch { pairs, chunk, common } => batch(&pairs, chunk, &common),
        Command::Bench { args, .. } => {
            let ctx = kit::cli::open(&args.device)?;
            Ok(mad::bench::run(&ctx, args.quick)?)
        }
        Command::Demo { out, common } => {
            kit::output::check_folder(&out, &[])?;
            let gpu = open_gpu(&common)?;
            let report = mad::demo::run(&out, gpu.as_ref()).with_context(|| format!("demo into {}", out.display()))?;
            kit::emit(&report, &[&out]);
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    kit::main(env!("CARGO_PKG_VERSION"), run)
}
