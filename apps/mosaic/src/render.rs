//! Mosaic rendering on the GPU (`render.comp`) and its CPU reference: cell k of the grid
//! shows the thumbnail of the tile assigned to patch k, resampled bilinearly to the cell size.

use engine::{Context, Location, PipelineDesc};
use rayon::prelude::*;

use crate::error::{MosaicError, Result};
use crate::shaders;

const WORKGROUP: u32 = 256;

/// The mosaic's layout: grid and cell size (pixels), and the thumbnails' size.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub cols: usize,
    pub rows: usize,
    pub cell: (usize, usize),
    pub thumb: (usize, usize),
}

impl Layout {
    pub fn width(&self) -> usize {
        self.cols * self.cell.0
    }
    pub fn height(&self) -> usize {
        self.rows * self.cell.1
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    cols: u32,
    rows: u32,
    cell_w: u32,
    cell_h: u32,
    thumb_w: u32,
    thumb_h: u32,
}

/// RGB8 thumbnails packed as RGBA8 words (alpha 255), as the kernel reads them.
fn pack(rgb: &[u8]) -> Vec<u32> {
    rgb.chunks_exact(3).map(|p| u32::from_le_bytes([p[0], p[1], p[2], 255])).collect()
}

fn check(layout: &Layout, thumbs: &[u8]) -> Result<()> {
    let need = layout.cols * layout.rows * layout.thumb.0 * layout.thumb.1 * 3;
    if thumbs.len() != need || layout.cell.0 == 0 || layout.cell.1 == 0 {
        return Err(MosaicError::InvalidInput(format!("render: {} thumbnail bytes for {layout:?}", thumbs.len())));
    }
    Ok(())
}

/// Renders on the GPU; `thumbs` holds one RGB8 thumbnail per cell, in cell order. Returns RGB8.
pub fn render_gpu(ctx: &Context, layout: &Layout, thumbs: &[u8]) -> Result<Vec<u8>> {
    check(layout, thumbs)?;
    let pixels = layout.width() * layout.height();
    if pixels as u64 * 4 > ctx.info().max_storage_buffer_range || pixels > u32::MAX as usize {
        return Err(MosaicError::InvalidInput(format!(
            "a {} x {} mosaic is too large for this device; use a smaller --tile-px",
            layout.width(),
            layout.height()
        )));
    }
    let pipe = ctx.compute_pipeline(&PipelineDesc {
        name: "render",
        spirv: shaders::RENDER,
        bindings: 2,
        push_bytes: std::mem::size_of::<Push>() as u32,
        spec: &[WORKGROUP],
    })?;
    let input = ctx.upload(&pack(thumbs), "thumbnails")?;
    let image = ctx.buffer::<u32>(pixels, Location::Device, "mosaic image")?;
    let push = Push {
        cols: layout.cols as u32,
        rows: layout.rows as u32,
        cell_w: layout.cell.0 as u32,
        cell_h: layout.cell.1 as u32,
        thumb_w: layout.thumb.0 as u32,
        thumb_h: layout.thumb.1 as u32,
    };
    let mut rec = ctx.recorder()?;
    rec.dispatch_linear(&pipe, &[input.binding(), image.binding()], &push, (pixels as u32).div_ceil(WORKGROUP));
    rec.submit()?.wait()?;
    Ok(ctx.download(&image)?.into_iter().flat_map(|w| w.to_le_bytes().into_iter().take(3)).collect())
}

/// CPU reference of [`render_gpu`] (same sampling, f32).
pub fn render_cpu(layout: &Layout, thumbs: &[u8]) -> Result<Vec<u8>> {
    check(layout, thumbs)?;
    let (tw, th) = (layout.thumb.0 as i64, layout.thumb.1 as i64);
    let width = layout.width();
    let mut out = vec![0u8; width * layout.height() * 3];
    out.par_chunks_mut(width * 3).enumerate().for_each(|(y, row)| {
        for x in 0..width {
            let cell = (y / layout.cell.1) * layout.cols + x / layout.cell.0;
            let sx = ((x % layout.cell.0) as f32 + 0.5) * tw as f32 / layout.cell.0 as f32 - 0.5;
            let sy = ((y % layout.cell.1) as f32 + 0.5) * th as f32 / layout.cell.1 as f32 - 0.5;
            let (fx, fy) = (sx.floor(), sy.floor());
            let (ax, ay) = (sx - fx, sy - fy);
            let base = cell * (tw * th) as usize * 3;
            let texel = |xx: i64, yy: i64, c: usize| {
                let (xx, yy) = (xx.clamp(0, tw - 1), yy.clamp(0, th - 1));
                thumbs[base + ((yy * tw + xx) as usize) * 3 + c] as f32 / 255.0
            };
            let (x0, y0) = (fx as i64, fy as i64);
            for c in 0..3 {
                let top = texel(x0, y0, c) * (1.0 - ax) + texel(x0 + 1, y0, c) * ax;
                let bottom = texel(x0, y0 + 1, c) * (1.0 - ax) + texel(x0 + 1, y0 + 1, c) * ax;
                row[x * 3 + c] = kit::image::to_u8(top * (1.0 - ay) + bottom * ay);
            }
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::testing;
    use rand::{Rng, SeedableRng};

    #[test]
    fn gpu_matches_cpu_within_one_level() {
        let ctx = testing::context();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        for layout in [
            Layout { cols: 3, rows: 2, cell: (13, 7), thumb: (5, 3) },
            Layout { cols: 1, rows: 1, cell: (1, 1), thumb: (4, 4) },
            Layout { cols: 5, rows: 3, cell: (4, 9), thumb: (17, 11) },
        ] {
            let thumbs: Vec<u8> =
                (0..layout.cols * layout.rows * layout.thumb.0 * layout.thumb.1 * 3).map(|_| rng.gen()).collect();
            let got = render_gpu(ctx, &layout, &thumbs).unwrap();
            let want = render_cpu(&layout, &thumbs).unwrap();
            let worst = got.iter().zip(&want).map(|(&a, &b)| (a as i32 - b as i32).abs()).max().unwrap();
            assert!(worst <= 1, "{layout:?}: differs by {worst} levels");
        }
        testing::assert_no_validation_messages();
    }
}
