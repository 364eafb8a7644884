//! `composite blend`: .ap files composited in one process into an image.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use composite::ap::{ApImage, Encoded};
use composite::cpu;
use composite::frame::Frame;
use composite::gpu::blend::GpuBlender;
use composite::types::Op;
use kit::image::IMAGE_EXTENSIONS;
use kit::CommonArgs;

use crate::records::BlendReport;

#[derive(Args)]
pub struct BlendArgs {
    /// .ap files of equal size, front (lowest rank) first
    #[arg(required = true, num_args = 1..)]
    inputs: Vec<PathBuf>,
    /// Colour image to write (.png, .jpg, .tif, .bmp or .webp)
    #[arg(long)]
    out: PathBuf,
    /// Also write the composited depth as a float32 .npy
    #[arg(long)]
    depth_out: Option<PathBuf>,
    /// zbuffer: nearest depth wins (ties to the earlier input); over: premultiplied alpha, front to back
    #[arg(long, value_enum, default_value_t = Op::ZBuffer)]
    op: Op,
    #[command(flatten)]
    common: CommonArgs,
}

pub fn run(args: BlendArgs) -> Result<()> {
    let BlendArgs { inputs, out, depth_out, op, common } = args;
    let refs: Vec<&Path> = inputs.iter().map(|p| p.as_path()).collect();
    kit::output::check_file(&out, IMAGE_EXTENSIONS, &refs)?;
    if let Some(d) = &depth_out {
        let mut all = refs.clone();
        all.push(&out);
        kit::output::check_file(d, &["npy"], &all)?;
    }
    let images: Vec<ApImage> = inputs.iter().map(|p| ApImage::read(p)).collect::<Result<_, _>>()?;
    let first = &images[0];
    for (img, path) in images.iter().zip(&inputs) {
        if (img.width, img.height) != (first.width, first.height) {
            bail!(
                "image sizes differ: {} is {}x{}, {} is {}x{}",
                inputs[0].display(),
                first.width,
                first.height,
                path.display(),
                img.width,
                img.height
            );
        }
    }
    let encoded: Vec<&Encoded> = images.iter().map(|i| &i.encoded).collect();
    let result = match common.context()? {
        None => cpu::blend::composite(&encoded, op)?,
        Some(ctx) => GpuBlender::new(&ctx)?.composite(&encoded, op)?,
    };
    let frame = Frame::decode(&result, first.width, first.height);
    frame.save(&out, depth_out.as_deref(), first.background)?;
    let report = BlendReport {
        out: out.clone(),
        inputs: inputs.len(),
        op,
        width: first.width,
        height: first.height,
        active_pixels: result.active_pixels(),
    };
    let mut outs: Vec<&Path> = vec![&out];
    outs.extend(depth_out.as_deref());
    kit::emit(&report, &outs);
    Ok(())
}
