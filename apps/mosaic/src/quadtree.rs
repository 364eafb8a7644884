//! Adaptive cells (`--layout adaptive --min-cell PX --max-cell PX`): a quadtree over the
//! target that keeps large square cells where the target is flat and splits them where it
//! has detail.
//!
//! The target's top-left `cols x rows` blocks of `min` pixels are covered by squares of
//! `max` pixels, clipped away where they pass the edge; a square is split into four while it
//! is larger than `min` and either passes the edge or has detail: the RMS difference of its
//! pixels from the mean colours of its u x v feature cells (what the matching sees of it)
//! is above [`DETAIL`] in 0..255 units. `max` is `min` times a power of two, so every cell is
//! a whole number of `min` blocks.

use crate::error::{MosaicError, Result};
use crate::image_ops::Pixels;

/// RMS detail (0..255 units) above which a cell is split.
pub const DETAIL: f64 = 12.0;

/// One cell: its top-left corner and side, in `min` blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub col: usize,
    pub row: usize,
    pub size: usize,
}

/// The adaptive layout's sizes, in target pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    pub min: usize,
    pub max: usize,
}

impl Sizes {
    /// Refuses sizes the quadtree cannot use.
    pub fn check(&self) -> Result<()> {
        let ratio = self.max / self.min.max(1);
        if self.min == 0 || self.max < self.min || ratio * self.min != self.max || !ratio.is_power_of_two() {
            return Err(MosaicError::CellSizes { min: self.min, max: self.max });
        }
        Ok(())
    }
}

/// The cells of an image `width` x `height` (pixels read through `data`), row-major by
/// their top-left block; `features` is the feature grid whose error decides the splits.
/// The image must hold at least one `min` block each way.
pub fn split(
    data: &(impl Pixels + ?Sized),
    (width, height): (usize, usize),
    sizes: Sizes,
    features: (usize, usize),
) -> Vec<Block> {
    let (cols, rows) = (width / sizes.min, height / sizes.min);
    let top = sizes.max / sizes.min;
    let mut out = Vec::new();
    let mut stack = Vec::new();
    for r in (0..rows).step_by(top) {
        for c in (0..cols).step_by(top) {
            stack.push(Block { col: c, row: r, size: top });
        }
    }
    while let Some(b) = stack.pop() {
        let inside = b.col + b.size <= cols && b.row + b.size <= rows;
        let px = (b.col * sizes.min, b.row * sizes.min, b.size * sizes.min);
        if b.size == 1 || (inside && detail(data, width, px, features) <= DETAIL) {
            if inside {
                out.push(b);
            }
            continue;
        }
        let half = b.size / 2;
        for (dc, dr) in [(0, 0), (half, 0), (0, half), (half, half)] {
            let child = Block { col: b.col + dc, row: b.row + dr, size: half };
            if child.col < cols && child.row < rows {
                stack.push(child);
            }
        }
    }
    out.sort_by_key(|b| (b.row, b.col));
    out
}

/// The RMS difference (0..255) of the square (x, y, side) from its u x v cells' means.
fn detail(
    data: &(impl Pixels + ?Sized),
    width: usize,
    (x0, y0, side): (usize, usize, usize),
    cells: (usize, usize),
) -> f64 {
    let mut sum = 0.0;
    for b in 0..cells.1 {
        let (ya, yb) = (y0 + b * side / cells.1, y0 + (b + 1) * side / cells.1);
        for a in 0..cells.0 {
            let (xa, xb) = (x0 + a * side / cells.0, x0 + (a + 1) * side / cells.0);
            let (mut s, mut s2) = ([0.0f64; 3], 0.0f64);
            for y in ya..yb {
                for x in xa..xb {
                    let v = data.rgb(y * width + x);
                    for k in 0..3 {
                        s[k] += v[k] as f64;
                        s2 += (v[k] as f64).powi(2);
                    }
                }
            }
            let count = ((xb - xa) * (yb - ya)) as f64;
            if count > 0.0 {
                sum += s2 - s.iter().map(|v| v * v).sum::<f64>() / count;
            }
        }
    }
    255.0 * (sum.max(0.0) / (3 * side * side) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gray pixels: flat on the left half, a checkerboard on the right.
    fn half_detailed(w: usize, h: usize) -> Vec<f32> {
        (0..w * h)
            .flat_map(|k| {
                let (x, y) = (k % w, k / w);
                let v = if x < w / 2 { 0.5 } else { ((x + y) % 2) as f32 };
                [v; 3]
            })
            .collect()
    }

    #[test]
    fn flat_areas_keep_large_cells_and_detail_gets_small_ones() {
        let (w, h) = (70, 50);
        let img = half_detailed(w, h);
        let sizes = Sizes { min: 4, max: 16 };
        let blocks = split(img.as_slice(), (w, h), sizes, (2, 2));
        // Every min block of the covered area lies in exactly one cell.
        let (cols, rows) = (w / 4, h / 4);
        let mut cover = vec![0; cols * rows];
        for b in &blocks {
            assert!(b.col + b.size <= cols && b.row + b.size <= rows && [1, 2, 4].contains(&b.size), "{b:?}");
            for r in b.row..b.row + b.size {
                for c in b.col..b.col + b.size {
                    cover[r * cols + c] += 1;
                }
            }
        }
        assert!(cover.iter().all(|&n| n == 1));
        assert!(blocks.windows(2).all(|p| (p[0].row, p[0].col) < (p[1].row, p[1].col)));
        // The flat half is mostly 16-pixel cells; the checkerboard is all 4-pixel cells.
        assert!(blocks.iter().filter(|b| b.col + b.size <= 8).any(|b| b.size == 4 && b.col % 4 == 0));
        assert!(blocks.iter().filter(|b| b.col * 4 >= w / 2).all(|b| b.size == 1));
        assert!(Sizes { min: 4, max: 12 }.check().is_err());
        assert!(Sizes { min: 8, max: 4 }.check().is_err());
        assert!(Sizes { min: 0, max: 4 }.check().is_err());
        assert!(Sizes { min: 3, max: 24 }.check().is_ok());
    }
}
