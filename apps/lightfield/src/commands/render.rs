//! `lightfield render`: one viewpoint of a compressed light field to an image (what `view`
//! shows).

use std::path::PathBuf;
use std::time::Instant;

use kit::stats::ms_since;
use lightfield::bitstream::Compressed;
use lightfield::codec::CodecPath;
use lightfield::cpu::render::render_cpu_with;
use lightfield::gpu::render::GpuRenderer;
use lightfield::gpu::GpuCodec;
use lightfield::render::{unpack_rgb8, PixelOrder};
use lightfield::Result;

use super::viewpoint::{viewpoint, ViewpointArgs};
use crate::records::{RenderReport, Viewpoint};

#[derive(clap::Args)]
pub struct RenderArgs {
    /// Compressed light field (.lfc)
    #[arg(value_name = "FILE.lfc")]
    input: PathBuf,
    #[command(flatten)]
    viewpoint: ViewpointArgs,
    /// Output image: .png, .jpg, .tif, .bmp or .webp (8-bit RGB)
    #[arg(long, value_name = "FILE.png")]
    out: PathBuf,
    #[command(flatten)]
    common: kit::CommonArgs,
}

pub fn run(args: RenderArgs) -> Result<()> {
    let RenderArgs { input, viewpoint: args, out, common } = args;
    let (input, out) = (input.as_path(), out.as_path());
    kit::output::check_file(out, kit::image::IMAGE_EXTENSIONS, &[input])?;
    let compressed = Compressed::read(input)?;
    let [_, _, h, w] = compressed.size;
    let view = viewpoint(&args, compressed.size, (w as u32, h as u32))?;
    // The packed frame and its RGB copy.
    kit::budget::elements(&[view.height as u64, view.width as u64], 4 + 3, "the rendered image")?;
    let ctx = common.context()?;
    let t0 = Instant::now();
    let (pixels, decode_ms) = match &ctx {
        Some(ctx) => {
            let codec = GpuCodec::new(ctx, &compressed.ensemble)?;
            let (lf, _) = lightfield::codec::decode_lightfield(&compressed, CodecPath::Gpu(&codec))?;
            let decode_ms = ms_since(t0);
            (GpuRenderer::new(ctx, &lf)?.render(&view, PixelOrder::Rgba)?, decode_ms)
        }
        None => {
            let (lf, _) = lightfield::codec::decode_lightfield(&compressed, CodecPath::Cpu)?;
            let decode_ms = ms_since(t0);
            let bar = kit::progress::bar(view.height as u64, "render");
            let pixels = render_cpu_with(&lf, &view, PixelOrder::Rgba, &|| bar.inc(1))?;
            bar.finish_and_clear();
            (pixels, decode_ms)
        }
    };
    let render_ms = ms_since(t0) - decode_ms;
    let rgb = unpack_rgb8(&pixels, PixelOrder::Rgba);
    kit::image::save_rgb8(out, view.width as usize, view.height as usize, &rgb)?;
    let report = RenderReport { viewpoint: Viewpoint::from(&view), decode_ms, render_ms };
    kit::emit(&report, &[out]);
    Ok(())
}
