//! `lightfield view`: a compressed light field in a window from any viewpoint (decoded once
//! on the GPU; the window is `viewer`).

use std::path::{Path, PathBuf};

use kit::viewer::ViewerError;
use lightfield::render::MAX_SIZE;
use lightfield::{LfError, Result};

use super::viewpoint::{viewpoint, ViewpointArgs};
use crate::records::{ViewReport, Viewpoint};
use crate::viewer::Viewer;

#[derive(clap::Args)]
pub struct ViewArgs {
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
}

/// The shortest window side `view` opens by default: tiny light fields are scaled up.
const MIN_WINDOW: u32 = 512;

pub fn run(args: ViewArgs) -> Result<()> {
    let ViewArgs { input, viewpoint: args, frames, screenshot, run } = args;
    let input = input.as_path();
    if let Some(shot) = &screenshot {
        kit::output::check_file(shot, kit::image::IMAGE_EXTENSIONS, &[input])?;
    }
    // The header, table and ensemble are checked before a window opens; the sections are
    // parsed while the views decode into device memory.
    let bytes = kit::input::read_bounded(input, kit::budget::get())?;
    let (header, _, ensemble) = lightfield::bitstream::open(&bytes).map_err(|e| LfError::file(input, e))?;
    let size = header.size;
    let [_, _, h, w] = size;
    let scale = MIN_WINDOW.div_ceil(w.max(h) as u32).max(1);
    let window = ((w as u32 * scale).min(MAX_SIZE), (h as u32 * scale).min(MAX_SIZE));
    let view = viewpoint(&args, size, window)?;
    let shot = screenshot.clone();
    let mut viewer = Viewer::new(bytes, size, ensemble, view);
    let (width, height) = (view.width, view.height);
    let window =
        kit::viewer::Options { title: "lightfield".into(), width, height, frames, screenshot, device: run.device };
    let shown = kit::viewer::run(&mut viewer, window).map_err(ViewerError::into_app)?;
    let report =
        ViewReport { frames: shown.frames, viewpoint: Viewpoint::from(&viewer.view()), decode_ms: viewer.decode_ms() };
    let outs: Vec<&Path> = shot.as_deref().into_iter().collect();
    kit::emit(&report, &outs);
    Ok(())
}
