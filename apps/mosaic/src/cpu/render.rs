//! The render stage on the CPU: the twin of [`crate::gpu::render`] (same sampling and colour
//! map, f32).

use rayon::prelude::*;

use crate::error::Result;
use crate::render::{check, Cells, Layout};

/// Renders on the CPU. Returns RGB8.
pub fn render_cpu(layout: &Layout, cells: &Cells) -> Result<Vec<u8>> {
    check(layout, cells)?;
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
            let base = cells.tile[cell] as usize * (tw * th) as usize * 3;
            let texel = |xx: i64, yy: i64, c: usize| {
                let (xx, yy) = (xx.clamp(0, tw - 1), yy.clamp(0, th - 1));
                cells.thumbs[base + ((yy * tw + xx) as usize) * 3 + c] as f32 / 255.0
            };
            let (x0, y0) = (fx as i64, fy as i64);
            let tint = &cells.tint[cell];
            for c in 0..3 {
                let top = texel(x0, y0, c) * (1.0 - ax) + texel(x0 + 1, y0, c) * ax;
                let bottom = texel(x0, y0 + 1, c) * (1.0 - ax) + texel(x0 + 1, y0 + 1, c) * ax;
                let v = top * (1.0 - ay) + bottom * ay;
                row[x * 3 + c] = kit::image::to_u8(tint.gain[c] * v + tint.offset[c]);
            }
        }
    });
    Ok(out)
}
