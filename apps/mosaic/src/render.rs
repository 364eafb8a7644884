//! Mosaic rendering: cell k of the grid shows the thumbnail of the tile assigned to patch k,
//! resampled bilinearly to the cell size, its colours mapped by the cell's [`Tint`]. The
//! stage runs on the GPU ([`crate::gpu::render`]) or the CPU ([`crate::cpu::render`]); both
//! check their inputs with [`check`].

use crate::error::{MosaicError, Result};

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

/// A cell's colour map: channel c of a sample v (0..1) becomes `gain[c] v + offset[c]`
/// (then clamped). The identity leaves the thumbnail as it is.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Tint {
    pub gain: [f32; 3],
    pub offset: [f32; 3],
}

impl Tint {
    pub const IDENTITY: Tint = Tint { gain: [1.0; 3], offset: [0.0; 3] };
}

/// What the cells show: cell k (row-major) shows thumbnail `tile[k]` of `thumbs` (RGB8,
/// `layout.thumb` each, every used thumbnail once) mapped by `tint[k]`.
#[derive(Clone, Copy, Debug)]
pub struct Cells<'a> {
    pub thumbs: &'a [u8],
    pub tile: &'a [u32],
    pub tint: &'a [Tint],
}

/// Refuses cells that do not match the layout or name a thumbnail that is not there.
pub fn check(layout: &Layout, cells: &Cells) -> Result<()> {
    let count = layout.cols * layout.rows;
    let thumb = layout.thumb.0 * layout.thumb.1 * 3;
    let thumbs = cells.thumbs.len().checked_div(thumb).unwrap_or(0);
    let bad = cells.thumbs.len() != thumbs * thumb
        || cells.tile.len() != count
        || cells.tint.len() != count
        || cells.tile.iter().any(|&t| t as usize >= thumbs)
        || layout.cell.0 == 0
        || layout.cell.1 == 0;
    if bad {
        return Err(MosaicError::InvalidInput(format!(
            "render: {} thumbnail bytes, {} cells, {} tints for {layout:?}",
            cells.thumbs.len(),
            cells.tile.len(),
            cells.tint.len()
        )));
    }
    Ok(())
}
