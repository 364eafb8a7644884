//! Rendering a light field from any viewpoint (`lightfield view` and `lightfield render`):
//! each output pixel blends the views within `aperture` of the virtual viewpoint with tent
//! weights (aperture 1: bilinear interpolation of the four nearest views; at an integer
//! viewpoint, that view alone), each view sampled bilinearly at the pixel shifted by
//! `focus` pixels per view of distance, so a wider aperture refocuses on the plane of that
//! disparity (shift-and-add). This file holds what both sides share: the viewpoint
//! ([`View`]) and the pixels' packing; [`crate::cpu::render`] is the reference and
//! [`crate::gpu::render`] runs `shaders/lightfield/render.comp` on views held in device
//! memory, with the same operation order.

use crate::error::{LfError, Result};

/// Largest |focus| in pixels per view: beyond it every shifted sample is clamped to an edge.
pub const MAX_FOCUS: f32 = 1.0e4;
/// Largest aperture radius in views.
pub const MAX_APERTURE: f32 = 1024.0;
/// The widest and tallest output a viewpoint may have, in pixels.
pub const MAX_SIZE: u32 = 16384;

/// Byte order of packed output pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PixelOrder {
    /// R in the lowest byte (R, G, B, A in memory).
    Rgba,
    /// B in the lowest byte (a BGRA swapchain).
    Bgra,
}

/// A viewpoint and how to render it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    /// Position in the view grid: row u, column v (fractional between captured views).
    pub position: [f32; 2],
    /// Disparity in pixels per view of the plane in focus: view (i, j) is sampled at
    /// (x + focus * (j - v), y + focus * (i - u)).
    pub focus: f32,
    /// Radius in views of the blend (at least 1).
    pub aperture: f32,
    /// Output size in pixels (the views are scaled to it).
    pub width: u32,
    pub height: u32,
}

impl View {
    /// The centre view of `lf` at its own size, in focus at disparity 0, aperture 1.
    pub fn centre(lf_size: [usize; 4]) -> View {
        let [u, v, h, w] = lf_size;
        View {
            position: [(u as f32 - 1.0) / 2.0, (v as f32 - 1.0) / 2.0],
            focus: 0.0,
            aperture: 1.0,
            width: w as u32,
            height: h as u32,
        }
    }

    /// Refuses a viewpoint outside the captured views or values the kernel cannot take.
    pub fn check(&self, lf_size: [usize; 4]) -> Result<()> {
        let (last_u, last_v) = (lf_size[0] as f32 - 1.0, lf_size[1] as f32 - 1.0);
        let [u, v] = self.position;
        if !(0.0..=last_u).contains(&u) || !(0.0..=last_v).contains(&v) {
            return Err(LfError::Viewpoint { position: self.position, last: [last_u, last_v] });
        }
        if !(-MAX_FOCUS..=MAX_FOCUS).contains(&self.focus) {
            return Err(LfError::Focus { focus: self.focus, max: MAX_FOCUS });
        }
        if !(1.0..=MAX_APERTURE).contains(&self.aperture) {
            return Err(LfError::Aperture { aperture: self.aperture, max: MAX_APERTURE });
        }
        if !(1..=MAX_SIZE).contains(&self.width) || !(1..=MAX_SIZE).contains(&self.height) {
            return Err(LfError::OutputSize { width: self.width, height: self.height, max: MAX_SIZE });
        }
        Ok(())
    }

    /// View pixels per output pixel along x and y.
    pub(crate) fn scale(&self, lf_size: [usize; 4]) -> [f32; 2] {
        [lf_size[3] as f32 / self.width as f32, lf_size[2] as f32 / self.height as f32]
    }

    /// The same view moved by (du, dv) views, kept within the captured views.
    pub fn moved(&self, du: f32, dv: f32, lf_size: [usize; 4]) -> View {
        let u = (self.position[0] + du).clamp(0.0, lf_size[0] as f32 - 1.0);
        let v = (self.position[1] + dv).clamp(0.0, lf_size[1] as f32 - 1.0);
        View { position: [u, v], ..*self }
    }
}

fn to_u8(v: f32) -> u32 {
    (v.clamp(0.0, 1.0) * 255.0 + 0.5) as u32
}

/// Packs RGB in [0, 1] into one pixel (alpha 255).
pub(crate) fn pack(c: [f32; 3], order: PixelOrder) -> u32 {
    let [r, g, b] = c.map(to_u8);
    match order {
        PixelOrder::Rgba => r | (g << 8) | (b << 16) | (255 << 24),
        PixelOrder::Bgra => b | (g << 8) | (r << 16) | (255 << 24),
    }
}

/// 8-bit RGB bytes of packed pixels.
pub fn unpack_rgb8(pixels: &[u32], order: PixelOrder) -> Vec<u8> {
    kit::viewer::unpack_rgb8(pixels, order == PixelOrder::Bgra)
}
