//! `lightfield decode`: a `.lfc` file to a float32 `.npy` and/or one PNG per view, or one
//! view alone from only the patches that cover it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use kit::output::Staged;
use kit::stats::ms_since;
use lightfield::bitstream::Compressed;
use lightfield::codec::decode_lightfield_with;
use lightfield::random_access::ViewSource;
use lightfield::views::{stage_views, Depth};
use lightfield::{LfError, Result};

use super::{codec_path, gpu_codec};
use crate::records::{DecodeReport, DecodeViewReport};

#[derive(clap::Args)]
pub struct DecodeArgs {
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
}

fn parse_view_index(text: &str) -> Result<(usize, usize), String> {
    kit::cli::parse_pair::<usize>(text, ',')
}

pub fn run(args: DecodeArgs) -> Result<()> {
    let DecodeArgs { input, out, views, depth, view, common } = args;
    match (view, out) {
        (Some(view), Some(out)) => decode_view(&input, view, &out, &common),
        (_, out) => decode(&input, out.as_deref(), views.as_deref(), depth, &common),
    }
}

/// Checks `decode`'s `.npy` output before any work; an image extension gets a pointer to
/// `--views`.
fn check_array_output(out: &Path, inputs: &[&Path]) -> Result<()> {
    let ext = out.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    if kit::image::IMAGE_EXTENSIONS.contains(&ext.as_str()) {
        return Err(LfError::ArrayOutputIsImage { path: out.into() });
    }
    kit::output::check_file(out, &["npy"], inputs)?;
    Ok(())
}

fn decode(
    input: &Path,
    out: Option<&Path>,
    views: Option<&Path>,
    depth: Depth,
    common: &kit::CommonArgs,
) -> Result<()> {
    if let Some(out) = out {
        check_array_output(out, &[input])?;
    }
    if let Some(dir) = views {
        kit::output::check_folder(dir, &[input])?;
    }
    let t0 = Instant::now();
    let bytes = kit::input::read_bounded(input, kit::budget::get())?;
    let read_ms = ms_since(t0);
    let t0 = Instant::now();
    let compressed = Compressed::from_bytes(&bytes).map_err(|e| LfError::file(input, e))?;
    let parse_ms = ms_since(t0);
    drop(bytes);
    let gpu = gpu_codec(common, &compressed.ensemble, "lightfield.decode")?;
    let n = compressed.codes.len();
    let bar = kit::progress::bar(n as u64, "decode");
    let t0 = Instant::now();
    let (lf, time) = decode_lightfield_with(&compressed, codec_path(&gpu), |done| bar.set_position(done as u64))?;
    bar.finish_and_clear();
    let decode_ms = ms_since(t0);
    // The views and the array are staged together and committed last, so a failure while
    // staging leaves no output; the array is staged after the views so that a view that
    // cannot be renamed into place (a folder of its name) fails before the array lands.
    let (mut staged, view_paths) = match views {
        Some(dir) => {
            let bar = kit::progress::bar((lf.u * lf.v) as u64, "views");
            let staged = stage_views(&lf, dir, depth, |done| bar.set_position(done as u64))?;
            bar.finish_and_clear();
            staged
        }
        None => (Staged::new(), Vec::new()),
    };
    if let Some(out) = out {
        lf.stage_npy(&mut staged, out)?;
    }
    staged.commit()?;
    let views_written = view_paths.len();
    let report = DecodeReport {
        shape: lf.shape(),
        views_written,
        depth_bits: views.map(|_| depth.bits()),
        decode_ms,
        read_ms,
        parse_ms,
        upload_kernels_ms: time.map(|t| t.host_stage_ms + t.host_wait_ms),
        scatter_ms: time.map(|t| t.host_prepare_ms),
        kernel_ms: time.map(|t| t.kernel_ms),
    };
    let outs: Vec<&Path> = out.into_iter().chain(views).collect();
    kit::emit(&report, &outs);
    Ok(())
}

fn decode_view(input: &Path, (u, v): (usize, usize), out: &Path, common: &kit::CommonArgs) -> Result<()> {
    let mut accepted = kit::image::IMAGE_EXTENSIONS.to_vec();
    accepted.push("npy");
    let format = kit::output::check_file(out, &accepted, &[input])?;
    let bytes = kit::input::read_bounded(input, kit::budget::get())?;
    let source = ViewSource::open(&bytes).map_err(|e| LfError::file(input, e))?;
    let [_, _, h, w] = source.size();
    lightfield::random_access::check_view(source.size(), (u, v))?;
    let gpu = gpu_codec(common, source.ensemble(), "lightfield.decode")?;
    let t0 = Instant::now();
    let (samples, sections) = source.decode_view(codec_path(&gpu), (u, v)).map_err(|e| LfError::file(input, e))?;
    let decode_ms = ms_since(t0);
    if format == "npy" {
        kit::npy::write_f32(out, &[h, w, lightfield::lightfield::COLOURS], &samples)?;
    } else {
        let rgb: Vec<u8> = samples.iter().map(|&x| kit::image::to_u8(x)).collect();
        kit::image::save_rgb8(out, w, h, &rgb)?;
    }
    let report = DecodeViewReport { view: [u, v], width: w, height: h, decode_ms, sections };
    kit::emit(&report, &[out]);
    Ok(())
}
