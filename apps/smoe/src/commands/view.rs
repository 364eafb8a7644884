//! `smoe view`: a model in a window (`crate::viewer`), rendered on the GPU every frame.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use kit::output::IMAGE_EXTENSIONS;
use kit::viewer::ViewerError;
use serde::Serialize;
use smoe::error::SmoeError;
use smoe::gpu::Mode;
use smoe::model::Model;

use super::{output_size, OutputSize};

#[derive(Args)]
pub struct ViewArgs {
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
}

#[derive(Serialize)]
struct ViewRecord {
    frames: u64,
    requested_frames: Option<u64>,
    width: u32,
    height: u32,
    kernels: usize,
}

impl fmt::Display for ViewRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.requested_frames {
            Some(n) => write!(f, "smoe: showed {} of {n} frames", self.frames),
            None => write!(f, "smoe: showed {} frames", self.frames),
        }
    }
}

pub fn run(args: ViewArgs) -> Result<()> {
    let ViewArgs { model: model_path, frames, screenshot, mode, size, run } = args;
    let model_path = model_path.as_path();
    if let Some(shot) = &screenshot {
        kit::output::check_file(shot, IMAGE_EXTENSIONS, &[model_path])?;
    }
    let model = Model::load(model_path)?;
    let (width, height) = output_size(&model, size.map_or(OutputSize::Extent, |(w, h)| OutputSize::Exact(w, h)))?;
    let kernels = model.len();
    let window = kit::viewer::Options {
        title: "smoe".into(),
        width,
        height,
        frames,
        screenshot: screenshot.clone(),
        device: run.device,
    };
    let shown = crate::viewer::run(model, mode, window).map_err(reported)?;
    let record = ViewRecord {
        frames: shown.frames,
        requested_frames: frames,
        width: shown.width,
        height: shown.height,
        kernels,
    };
    let outs: Vec<&Path> = screenshot.iter().map(PathBuf::as_path).collect();
    kit::emit(&record, &outs);
    Ok(())
}

/// The viewer's error as `kit::main` reads it: each variant's error as itself, so that an
/// engine error's kind chooses the exit status (the window's device is opened inside the
/// loop), whether the viewer or the scene raised it.
fn reported(error: ViewerError<SmoeError>) -> anyhow::Error {
    match error {
        ViewerError::Engine(e) => e.into(),
        ViewerError::Kit(e) => e.into(),
        ViewerError::Scene(e) => e.into(),
    }
}
