//! `composite decode`: an Active Pixel (.ap) file into a colour image and a depth .npy.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use composite::ap::ApImage;
use composite::frame::Frame;
use kit::image::IMAGE_EXTENSIONS;

use super::HostArgs;
use crate::records::DecodeReport;

#[derive(Args)]
pub struct DecodeArgs {
    /// The .ap file to decode
    input: PathBuf,
    /// Colour image to write (.png, .jpg, .tif, .bmp or .webp); background where inactive
    #[arg(long)]
    color: PathBuf,
    /// Also write the depth as a float32 .npy
    #[arg(long)]
    depth: Option<PathBuf>,
    #[command(flatten)]
    host: HostArgs,
}

pub fn run(args: DecodeArgs) -> Result<()> {
    // kit::main applies --json and --max-memory.
    let DecodeArgs { input, color, depth, host: _ } = args;
    kit::output::check_file(&color, IMAGE_EXTENSIONS, &[&input])?;
    if let Some(d) = &depth {
        kit::output::check_file(d, &["npy"], &[&input, &color])?;
    }
    let image = ApImage::read(&input)?;
    let frame = Frame::decode(&image.encoded, image.width, image.height);
    frame.save(&color, depth.as_deref(), image.background)?;
    let report = DecodeReport {
        out: color.clone(),
        width: image.width,
        height: image.height,
        active_pixels: image.encoded.active_pixels(),
    };
    let mut outs: Vec<&Path> = vec![&color];
    outs.extend(depth.as_deref());
    kit::emit(&report, &outs);
    Ok(())
}
