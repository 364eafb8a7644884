//! The geometry the release's C helpers impose: 16x16 blocks every 4 pixels, each block's
//! statistics filling the 4x4 cell at its top-left corner, everything past the last cell
//! zero, and the crop `BSIZE+1 : end-BSIZE-1` applied before the norms. Shared by the CPU
//! reference and the GPU path so both agree on every boundary.

use crate::constants::{BLOCK, CROP, MIN_NEIGHBOUR_OFFSET, STRIDE};

/// Block layout of one image size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    pub width: usize,
    pub height: usize,
    /// Blocks per row: `i` runs over `0, 4, .. < width - 15` in `ical_std.c`.
    pub blocks_x: usize,
    /// Blocks per column.
    pub blocks_y: usize,
}

impl Grid {
    /// The grid of a `width x height` image (both at least [`crate::constants::MIN_SIDE`]).
    pub fn new(width: usize, height: usize) -> Grid {
        Grid { width, height, blocks_x: (width - BLOCK) / STRIDE + 1, blocks_y: (height - BLOCK) / STRIDE + 1 }
    }

    pub fn blocks(&self) -> usize {
        self.blocks_x * self.blocks_y
    }

    pub fn pixels(&self) -> usize {
        self.width * self.height
    }

    /// Whether `ical_std.c` reads the right-hand neighbour of block column `bx` in its
    /// minimum: the read position `i + 5` must satisfy `i + 5 < width - 15`.
    pub fn right_neighbour(&self, bx: usize) -> bool {
        STRIDE * bx + MIN_NEIGHBOUR_OFFSET + BLOCK - 1 < self.width
    }

    /// The same test for the neighbour below block row `by`.
    pub fn lower_neighbour(&self, by: usize) -> bool {
        STRIDE * by + MIN_NEIGHBOUR_OFFSET + BLOCK - 1 < self.height
    }

    /// The block whose cell holds pixel `(x, y)`, if any (pixels past the last cell stay 0).
    pub fn cell_of(&self, x: usize, y: usize) -> Option<usize> {
        let (bx, by) = (x / STRIDE, y / STRIDE);
        (bx < self.blocks_x && by < self.blocks_y).then_some(by * self.blocks_x + bx)
    }

    /// Rows (or columns) kept by the crop `BSIZE+1 : end-BSIZE-1`: `16 .. size - 17`.
    pub fn crop_range(size: usize) -> std::ops::Range<usize> {
        CROP..size - CROP - 1
    }

    /// Number of pixels in the cropped map.
    pub fn crop_pixels(&self) -> usize {
        Self::crop_range(self.width).len() * Self::crop_range(self.height).len()
    }

    /// Number of cropped-map pixels inside the cell of block `(bx, by)`.
    pub fn cell_crop_pixels(&self, bx: usize, by: usize) -> usize {
        let overlap = |start: usize, size: usize| {
            let r = Self::crop_range(size);
            (start + STRIDE).min(r.end).saturating_sub(start.max(r.start))
        };
        overlap(STRIDE * bx, self.width) * overlap(STRIDE * by, self.height)
    }
}

/// A rectangle of blocks (equivalently of their cells) of a [`Grid`]: columns `x0..x1`,
/// rows `y0..y1`. A tile of a large image ([`crate::tiled`]) scores the blocks of one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cells {
    pub x0: usize,
    pub y0: usize,
    pub x1: usize,
    pub y1: usize,
}

impl Cells {
    /// Every block of `grid`.
    pub fn all(grid: &Grid) -> Cells {
        Cells { x0: 0, y0: 0, x1: grid.blocks_x, y1: grid.blocks_y }
    }

    pub fn width(&self) -> usize {
        self.x1 - self.x0
    }

    pub fn height(&self) -> usize {
        self.y1 - self.y0
    }

    /// The blocks `(bx, by)`, row-major.
    pub fn iter(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (self.y0..self.y1).flat_map(move |by| (self.x0..self.x1).map(move |bx| (bx, by)))
    }

    /// The pixel columns (or rows) the cells cover: `STRIDE * start .. STRIDE * end`.
    pub fn pixels(start: usize, end: usize) -> std::ops::Range<usize> {
        STRIDE * start..STRIDE * end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_cover_the_crop_as_the_release_does() {
        for (w, h) in [(34, 34), (97, 61), (512, 512), (100, 37)] {
            let g = Grid::new(w, h);
            let total: usize = (0..g.blocks_y)
                .flat_map(|by| (0..g.blocks_x).map(move |bx| (bx, by)))
                .map(|(bx, by)| g.cell_crop_pixels(bx, by))
                .sum();
            // Cells reach row 4*(blocks-1)+3 >= size-13 > size-18, so they cover the crop.
            assert_eq!(total, g.crop_pixels(), "{w}x{h}");
        }
        // 97 wide: i runs 0..=80 (i < 82), the neighbour read at i+5 needs i+5 < 82.
        let g = Grid::new(97, 61);
        assert_eq!(g.blocks_x, 21);
        assert!(g.right_neighbour(19) && !g.right_neighbour(20));
    }
}
