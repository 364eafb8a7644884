//! `smoe convert`: a model between the JSON, binary (.smoe/.bin) and compact (.smc)
//! formats; `.smc` at a quality or the finest quantisation within a size.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use clap::Args;
use kit::output::Staged;
use serde::Serialize;
use smoe::model::{Model, MODEL_EXTENSIONS};

use super::parse_bpp;

#[derive(Args)]
pub struct ConvertArgs {
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
}

pub fn run(args: ConvertArgs) -> Result<()> {
    let ConvertArgs { input, output, quality, bpp, bytes, .. } = args;
    let size = match (quality, bpp, bytes) {
        (Some(q), ..) => Some(SmcSize::Quality(q)),
        (_, Some(b), _) => Some(SmcSize::Bpp(b)),
        (.., Some(n)) => Some(SmcSize::Bytes(n)),
        _ => None,
    };
    convert(&input, &output, size)
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
enum SmcSize {
    /// `--quality`: the steps of [`smoe::codec::Steps::quality_scale`].
    Quality(u32),
    /// `--bpp`: at most this many bits per pixel of every view.
    Bpp(f64),
    /// `--bytes`: at most this many bytes.
    Bytes(usize),
}

fn convert(input: &Path, output: &Path, size: Option<SmcSize>) -> Result<()> {
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
