//! The subcommands, one file each: their flags and their work. Every output is checked
//! before any input is read, long steps show progress bars, and each ends with one typed
//! record (`records`). What several of them share lives here: the flags of the commands
//! that run without a GPU, the value parsers, and the codec on the chosen backend.

pub mod bench;
pub mod decode;
pub mod demo;
pub mod encode;
pub mod generate;
pub mod info;
pub mod render;
pub mod train;
pub mod view;
pub mod viewpoint;

use lightfield::codec::CodecPath;
use lightfield::codes::MIN_EPSILON;
use lightfield::dictionary::Ensemble;
use lightfield::gpu::GpuCodec;
use lightfield::lightfield::LightField;
use lightfield::patch::PatchGrid;
use lightfield::Result;

/// `--json` and `--max-memory` for the commands that read or write files without a GPU.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ReportArgs {
    /// Print one JSON object per line (docs/cli.md) instead of text
    #[arg(long)]
    json: bool,
    /// Memory budget for reading inputs, such as 512M or 8G (default: half of physical memory)
    #[arg(long, value_name = "SIZE", value_parser = kit::budget::parse_size)]
    max_memory: Option<u64>,
}

/// A view grid or a count pair `AxB`, each side in 1..=1024.
fn parse_grid(text: &str) -> Result<(usize, usize), String> {
    let (a, b) = kit::cli::parse_pair::<usize>(text, 'x')?;
    if !(1..=1024).contains(&a) || !(1..=1024).contains(&b) {
        return Err(format!("{a}x{b}: each side must be between 1 and 1024"));
    }
    Ok((a, b))
}

/// An RMSE bound in [MIN_EPSILON, 1].
fn parse_epsilon(text: &str) -> Result<f32, String> {
    let v = kit::cli::parse_finite(text)?;
    if !(MIN_EPSILON as f64..=1.0).contains(&v) {
        return Err(format!("{v} is not between {MIN_EPSILON} and 1"));
    }
    Ok(v as f32)
}

/// The GPU codec for `ens` when the backend is `gpu` (the device is named in the envelope),
/// with the workgroup tuned for `kernel` (`lightfield.encode` or `.decode`) on the device,
/// else the built-in one.
fn gpu_codec(common: &kit::CommonArgs, ens: &Ensemble, kernel: &str) -> Result<Option<GpuCodec>> {
    Ok(match common.context()? {
        Some(ctx) => Some(match kit::tuning::param(ctx.info(), kernel, "workgroup") {
            Some(workgroup) => GpuCodec::with_workgroup(&ctx, ens, workgroup)?,
            None => GpuCodec::new(&ctx, ens)?,
        }),
        None => None,
    })
}

fn patch_count(ens: &Ensemble, lf: &LightField) -> usize {
    PatchGrid::new(ens.shape, lf.u, lf.v, lf.h, lf.w).len()
}

fn codec_path(gpu: &Option<GpuCodec>) -> CodecPath<'_> {
    gpu.as_ref().map_or(CodecPath::Cpu, CodecPath::Gpu)
}
