//! A raw partial image as the rasteriser produces it: RGBA8 colour and f32 depth per pixel,
//! row-major, row 0 at the top; depth 1.0 marks pixels no fragment reached.

use std::path::Path;

use crate::ap::{pack_rgba, runs, Encoded, BACKGROUND_DEPTH};
use crate::error::{CompositeError, Result};

/// Colour (packed RGBA8, R in the low byte) and depth planes of one image.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub color: Vec<u32>,
    pub depth: Vec<f32>,
}

impl Frame {
    /// An all-background frame.
    pub fn empty(width: u32, height: u32) -> Frame {
        let n = width as usize * height as usize;
        Frame { width, height, color: vec![0; n], depth: vec![BACKGROUND_DEPTH; n] }
    }

    pub fn pixels(&self) -> usize {
        self.color.len()
    }

    /// Decodes an encoded image of `width x height` (inactive pixels: colour 0, depth 1.0).
    pub fn decode(encoded: &Encoded, width: u32, height: u32) -> Frame {
        let mut frame = Frame::empty(width, height);
        frame.paint(encoded, 0);
        frame
    }

    /// Writes the active pixels of an encoded span into the frame from pixel `start` on (the
    /// span's inactive pixels are left as they are).
    pub fn paint(&mut self, encoded: &Encoded, start: usize) {
        let mut p = start;
        for run in runs(&encoded.words) {
            p += run.inactive as usize;
            self.paint_raw(run.pixels, p);
            p += run.active as usize;
        }
    }

    /// Writes raw pixels ((colour, depth bits) word pairs) into the frame from pixel `start` on.
    pub fn paint_raw(&mut self, words: &[u32], start: usize) {
        for (i, px) in words.chunks_exact(2).enumerate() {
            self.color[start + i] = px[0];
            self.depth[start + i] = f32::from_bits(px[1]);
        }
    }

    /// RGBA8 bytes, with `background` where the depth is the background depth.
    pub fn rgba_bytes(&self, background: [u8; 4]) -> Vec<u8> {
        let bg = pack_rgba(background);
        self.color
            .iter()
            .zip(&self.depth)
            .flat_map(|(&c, &d)| if d == BACKGROUND_DEPTH { bg } else { c }.to_le_bytes())
            .collect()
    }

    /// Loads colour from an image (any format kit reads, by content; alpha kept) and depth
    /// from a float32 or float64 (H, W) `.npy` whose values are finite (kit's reader checks
    /// the bytes present and the budget before reading; float64 is rounded to float32, the
    /// precision the compositor works in).
    pub fn load(color: &Path, depth: &Path) -> Result<Frame> {
        let header = kit::npy::header(depth)?;
        if !matches!(header.dtype, kit::npy::NpyDtype::F32 | kit::npy::NpyDtype::F64) {
            let dtype = if header.dtype == kit::npy::NpyDtype::U8 { "uint8" } else { "uint16" };
            return Err(CompositeError::DepthType { path: depth.to_path_buf(), dtype });
        }
        let (w, h, rgba) = kit::image::load_rgba8(color)?;
        if header.shape != [h, w] {
            return Err(CompositeError::DepthShape {
                color: color.to_path_buf(),
                depth: depth.to_path_buf(),
                width: w,
                height: h,
                shape: header.shape,
            });
        }
        crate::ap::pixel_count(w as u32, h as u32)?;
        let npy = kit::npy::read(depth)?;
        let color = rgba.chunks_exact(4).map(|c| pack_rgba([c[0], c[1], c[2], c[3]])).collect();
        Ok(Frame { width: w as u32, height: h as u32, color, depth: npy.data })
    }

    /// Writes colour as RGBA8 in the image format of the extension (background where
    /// inactive) and, if asked, depth as float32 `.npy`: both files or neither.
    pub fn save(&self, color: &Path, depth: Option<&Path>, background: [u8; 4]) -> Result<()> {
        let mut staged = kit::output::Staged::new();
        self.stage(&mut staged, color, depth, background)?;
        Ok(staged.commit()?)
    }

    /// Like [`Frame::save`], into `staged`: the files land when `staged` is committed,
    /// together with the command's other outputs.
    pub fn stage(
        &self,
        staged: &mut kit::output::Staged,
        color: &Path,
        depth: Option<&Path>,
        background: [u8; 4],
    ) -> Result<()> {
        let (w, h) = (self.width as usize, self.height as usize);
        let rgba = self.rgba_bytes(background);
        kit::image::stage(staged, color, w, h, &rgba, kit::image::Layout::Rgba8, Default::default())?;
        if let Some(d) = depth {
            kit::npy::stage_f32(staged, d, &[h, w], &self.depth)?;
        }
        Ok(())
    }
}

/// The raw form of colour and depth planes, as raw spans travel: (colour, depth bits) per
/// pixel.
pub fn raw_words(color: &[u32], depth: &[f32]) -> Vec<u32> {
    color.iter().zip(depth).flat_map(|(&c, &d)| [c, d.to_bits()]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_writes_colour_and_depth_or_neither() {
        let dir = tempfile::tempdir().unwrap();
        let mut frame = Frame::empty(3, 2);
        frame.color[1] = pack_rgba([10, 20, 30, 255]);
        frame.depth[1] = 0.25;
        let (color, depth) = (dir.path().join("c.png"), dir.path().join("d.npy"));
        frame.save(&color, Some(&depth), [0, 0, 0, 0]).unwrap();
        assert_eq!(kit::npy::read(&depth).unwrap().data, frame.depth);

        // The depth cannot be written (its folder is missing): the colour is not written either.
        let lone = dir.path().join("lone.png");
        assert!(frame.save(&lone, Some(&dir.path().join("missing/d.npy")), [0, 0, 0, 0]).is_err());
        assert!(!lone.exists(), "the colour image was written without its depth");
    }
}
