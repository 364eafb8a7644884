//! The render stage on the GPU (`render.comp`); [`crate::cpu::render`] is its twin.
//!
//! Each used thumbnail is held once, however many cells show it (`--repeat`), and the GPU
//! renders the image in bands of rows, so a poster needs device memory for one band only.

use engine::{Context, Location};

use crate::error::{MosaicError, Result};
use crate::render::{check, Cells, Layout, Tint};
use crate::shaders::kernels;

const WORKGROUP: u32 = 256;
/// The most bytes one band of the GPU image takes (RGBA8 words).
const BAND_BYTES: u64 = 64 << 20;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    cols: u32,
    cell_w: u32,
    cell_h: u32,
    thumb_w: u32,
    thumb_h: u32,
    /// First output row of this band, and its rows.
    y0: u32,
    band_rows: u32,
}

/// RGB8 thumbnails packed as RGBA8 words (alpha 255), as the kernel reads them.
fn pack(rgb: &[u8]) -> Vec<u32> {
    rgb.chunks_exact(3).map(|p| u32::from_le_bytes([p[0], p[1], p[2], 255])).collect()
}

/// Renders on the GPU, band by band. Returns RGB8.
pub fn render_gpu(ctx: &Context, layout: &Layout, cells: &Cells) -> Result<Vec<u8>> {
    render_bands(ctx, layout, cells, BAND_BYTES)
}

/// [`render_gpu`] with bands of at most `band_bytes`.
fn render_bands(ctx: &Context, layout: &Layout, cells: &Cells, band_bytes: u64) -> Result<Vec<u8>> {
    check(layout, cells)?;
    let (width, height) = (layout.width(), layout.height());
    let row_bytes = width as u64 * 4;
    let band_rows = (band_bytes.min(ctx.info().max_storage_buffer_range) / row_bytes).min(height as u64) as usize;
    if band_rows == 0 || width as u64 * band_rows as u64 > u32::MAX as u64 {
        return Err(MosaicError::InvalidInput(format!(
            "a {width} pixels wide mosaic is too wide for this device; use a smaller --tile-px"
        )));
    }
    let pipe = ctx.kernel::<Push>(&kernels::RENDER, &[WORKGROUP])?;
    let thumbs = ctx.upload(&pack(cells.thumbs), "thumbnails")?;
    let tiles = ctx.upload(cells.tile, "cell tiles")?;
    let tints = ctx.upload(bytemuck::cast_slice::<Tint, f32>(cells.tint), "cell tints")?;
    let image = ctx.buffer::<u32>(width * band_rows, Location::Device, "mosaic band")?;
    let mut out = Vec::with_capacity(width * height * 3);
    for y0 in (0..height).step_by(band_rows) {
        let rows = band_rows.min(height - y0);
        let push = Push {
            cols: layout.cols as u32,
            cell_w: layout.cell.0 as u32,
            cell_h: layout.cell.1 as u32,
            thumb_w: layout.thumb.0 as u32,
            thumb_h: layout.thumb.1 as u32,
            y0: y0 as u32,
            band_rows: rows as u32,
        };
        let pixels = width * rows;
        let mut rec = ctx.recorder()?;
        rec.pass(&pipe)
            .read(&thumbs)
            .read(&tiles)
            .read(&tints)
            .write(&image)
            .push(&push)
            .dispatch_linear((pixels as u32).div_ceil(WORKGROUP))?;
        rec.submit()?.wait()?;
        let band = ctx.download_range(&image, 0, pixels)?;
        out.extend(band.into_iter().flat_map(|w| w.to_le_bytes().into_iter().take(3)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::render::render_cpu;
    use engine::testing;
    use rand::{Rng, SeedableRng};

    #[test]
    fn gpu_matches_cpu_within_one_level() {
        let ctx = testing::context();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        for (layout, thumbs) in [
            (Layout { cols: 3, rows: 2, cell: (13, 7), thumb: (5, 3) }, 6),
            (Layout { cols: 1, rows: 1, cell: (1, 1), thumb: (4, 4) }, 1),
            (Layout { cols: 5, rows: 3, cell: (4, 9), thumb: (17, 11) }, 4),
        ] {
            let count = layout.cols * layout.rows;
            let pixels: Vec<u8> = (0..thumbs * layout.thumb.0 * layout.thumb.1 * 3).map(|_| rng.gen()).collect();
            let tile: Vec<u32> = (0..count).map(|_| rng.gen_range(0..thumbs as u32)).collect();
            let tint: Vec<Tint> = (0..count)
                .map(|k| match k % 3 {
                    0 => Tint::IDENTITY,
                    _ => Tint {
                        gain: [rng.gen_range(0.0..2.0), rng.gen_range(0.0..2.0), rng.gen_range(0.0..2.0)],
                        offset: [rng.gen_range(-0.5..0.5), rng.gen_range(-0.5..0.5), rng.gen_range(-0.5..0.5)],
                    },
                })
                .collect();
            let cells = Cells { thumbs: &pixels, tile: &tile, tint: &tint };
            let got = render_gpu(ctx, &layout, &cells).unwrap();
            let want = render_cpu(&layout, &cells).unwrap();
            let worst = got.iter().zip(&want).map(|(&a, &b)| (a as i32 - b as i32).abs()).max().unwrap();
            assert!(worst <= 1, "{layout:?}: differs by {worst} levels");
        }
        testing::assert_no_validation_messages();
    }

    /// A 2048 x 1536 poster from 30 thumbnails over 64 x 48 cells, in 13 GPU bands of 122
    /// rows (the last one partial): the same image as the CPU.
    #[test]
    fn large_outputs_render_in_bands() {
        let ctx = testing::context();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let layout = Layout { cols: 64, rows: 48, cell: (32, 32), thumb: (16, 16) };
        let count = layout.cols * layout.rows;
        let pixels: Vec<u8> = (0..30 * 16 * 16 * 3).map(|_| rng.gen()).collect();
        let tile: Vec<u32> = (0..count).map(|k| (k % 30) as u32).collect();
        let tint = vec![Tint::IDENTITY; count];
        let cells = Cells { thumbs: &pixels, tile: &tile, tint: &tint };
        let got = render_bands(ctx, &layout, &cells, 1_000_000).unwrap();
        let want = render_cpu(&layout, &cells).unwrap();
        assert_eq!(got.len(), 2048 * 1536 * 3);
        let worst = got.iter().zip(&want).map(|(&a, &b)| (a as i32 - b as i32).abs()).max().unwrap();
        assert!(worst <= 1, "differs by {worst} levels");
        testing::assert_no_validation_messages();
    }
}
