//! `lightfield generate`: a synthetic light field (textured planes at several depths) as a
//! float32 `.npy`.

use std::path::PathBuf;
use std::time::Instant;

use kit::stats::ms_since;
use lightfield::Result;

use super::{parse_grid, ReportArgs};
use crate::records::GenerateReport;

#[derive(clap::Args)]
pub struct GenerateArgs {
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
}

pub fn run(args: GenerateArgs) -> Result<()> {
    let GenerateArgs { out, views, size, seed, report: _ } = args;
    let out = out.as_path();
    // Not `check_array_output`: its pointer to decode's `--views DIR` means nothing here.
    kit::output::check_file(out, &["npy"], &[])?;
    let (w, h) = (size.0 as usize, size.1 as usize);
    let dims = [views.0 as u64, views.1 as u64, h as u64, w as u64, lightfield::lightfield::COLOURS as u64];
    kit::budget::elements(&dims, 4, "the generated light field")?;
    let spinner = kit::progress::spinner("generate");
    let t0 = Instant::now();
    let lf = lightfield::synth::generate(views, (w, h), seed);
    lf.write_npy(out)?;
    spinner.finish_and_clear();
    kit::emit(&GenerateReport { shape: lf.shape(), seed, generate_ms: ms_since(t0) }, &[out]);
    Ok(())
}
