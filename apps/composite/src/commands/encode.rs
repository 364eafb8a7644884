//! `composite encode`: a colour image and its depth into an Active Pixel (.ap) file.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use composite::ap::ApImage;
use composite::cpu;
use composite::frame::Frame;
use composite::gpu::encode::GpuEncoder;
use kit::CommonArgs;

use crate::records::EncodeReport;

#[derive(Args)]
pub struct EncodeArgs {
    /// Colour image (PNG, JPEG, TIFF, WebP or BMP, read by content; RGBA, alpha kept)
    #[arg(long)]
    color: PathBuf,
    /// Depth as a float32 or float64 .npy of shape (height, width); 1.0 marks background pixels
    #[arg(long)]
    depth: PathBuf,
    /// The .ap file to write
    #[arg(long)]
    out: PathBuf,
    /// Background RGBA stored in the header: four values 0-255
    #[arg(long, default_value = "0,0,0,0", value_name = "R,G,B,A", value_parser = parse_background)]
    background: [u8; 4],
    #[command(flatten)]
    common: CommonArgs,
}

/// `R,G,B,A` with four values 0-255 (clap value parser).
fn parse_background(text: &str) -> Result<[u8; 4], String> {
    let parts: Vec<&str> = text.split(',').collect();
    let bad = || format!("{text:?}: expected R,G,B,A with four values 0-255");
    let [r, g, b, a] = parts[..] else { return Err(bad()) };
    let value = |p: &str| p.trim().parse::<u8>().map_err(|_| bad());
    Ok([value(r)?, value(g)?, value(b)?, value(a)?])
}

pub fn run(args: EncodeArgs) -> Result<()> {
    let EncodeArgs { color, depth, out, background, common } = args;
    kit::output::check_file(&out, &["ap"], &[&color, &depth])?;
    let frame = Frame::load(&color, &depth)?;
    let encoded = match common.context()? {
        None => cpu::encode::encode_parallel(&frame),
        Some(ctx) => {
            let c = ctx.upload(&frame.color, "colour")?;
            let d = ctx.upload(&frame.depth, "depth")?;
            GpuEncoder::new(&ctx)?.encode(&c, &d, frame.width, frame.height)?.0
        }
    };
    let image = ApImage::new(frame.width, frame.height, background, encoded)?;
    image.write(&out)?;
    let report = EncodeReport {
        out: out.clone(),
        width: frame.width,
        height: frame.height,
        bytes: image.to_bytes().len(),
        raw_bytes: 8 * frame.pixels(),
        active_pixels: image.encoded.active_pixels(),
    };
    kit::emit(&report, &[&out]);
    Ok(())
}
