//! Light fields in memory and their input files: a `.npy` array of shape (U, V, H, W, 3)
//! (uint8 scaled by 1/255, uint16 by 1/65535, or float in [0, 1]), or a folder of view images
//! laid out by their names ([`crate::layout`]). Every reader checks the shape, NaN and the value range.

use std::path::Path;

use crate::error::{LfError, Result};
use crate::samples::Samples;

/// Colour channels of every light field (RGB).
pub const COLOURS: usize = 3;

/// U x V views of H x W RGB pixels, f32 in [0, 1], stored (U, V, H, W, 3) in C order;
/// view (0, 0) is the top-left camera. The samples are owned, or mapped from a float32
/// `.npy` ([`Samples`]).
#[derive(Clone, Debug, PartialEq)]
pub struct LightField {
    pub u: usize,
    pub v: usize,
    pub h: usize,
    pub w: usize,
    pub data: Samples,
}

impl LightField {
    /// Wraps `data`, checking its length against the shape.
    pub fn new(u: usize, v: usize, h: usize, w: usize, data: impl Into<Samples>) -> Result<LightField> {
        let data = data.into();
        if u == 0 || v == 0 || h == 0 || w == 0 {
            return Err(LfError::EmptyLightField { size: [u, v, h, w] });
        }
        if data.len() != u * v * h * w * COLOURS {
            return Err(LfError::SampleCount {
                size: [u, v, h, w],
                needed: u * v * h * w * COLOURS,
                samples: data.len(),
            });
        }
        Ok(LightField { u, v, h, w, data })
    }

    /// Index of the red sample of pixel (y, x) in view (u, v).
    pub fn index(&self, u: usize, v: usize, y: usize, x: usize) -> usize {
        (((u * self.v + v) * self.h + y) * self.w + x) * COLOURS
    }

    /// Samples in the light field (U * V * H * W * 3).
    pub fn samples(&self) -> usize {
        self.data.len()
    }

    /// Shape as written to `.npy`.
    pub fn shape(&self) -> [usize; 5] {
        [self.u, self.v, self.h, self.w, COLOURS]
    }

    /// The pixels of view (u, v), interleaved RGB.
    pub fn view(&self, u: usize, v: usize) -> &[f32] {
        let start = self.index(u, v, 0, 0);
        &self.data[start..start + self.h * self.w * COLOURS]
    }

    /// Refuses NaN, infinities and values outside [0, 1].
    pub fn check_values(&self, what: &str) -> Result<()> {
        check_samples(&self.data, 0, what)
    }

    /// Reads a folder of view images (any format [`kit::image::load`] reads, 8 or 16 bits,
    /// EXIF orientation applied), laid out by [`crate::layout::find_views`]: HCI, Stanford
    /// or row/column names, else name order on `grid`. Gray views are repeated into the
    /// three colours. The whole light field is checked against the memory budget once the
    /// first view's size is known.
    pub fn read_folder(dir: &Path, grid: Option<(usize, usize)>) -> Result<LightField> {
        let found = crate::layout::find_views(dir, grid)?;
        let ((u, v), files) = (found.grid, found.files);
        let mut data = Vec::new();
        let mut size = None;
        for f in &files {
            let img = kit::image::load(f)?;
            let (w, h) = *size.get_or_insert((img.width, img.height));
            if data.is_empty() {
                let dims = [u as u64, v as u64, h as u64, w as u64, COLOURS as u64];
                let count = kit::budget::elements(&dims, 4, &format!("the light field in {}", dir.display()))?;
                data.reserve_exact(count as usize);
            }
            if (w, h) != (img.width, img.height) {
                return Err(LfError::file(f, format!("is {}x{}, the first view is {w}x{h}", img.width, img.height)));
            }
            if img.channels == 1 {
                data.extend(img.data.iter().flat_map(|&g| [g; COLOURS]));
            } else {
                data.extend_from_slice(&img.data);
            }
        }
        let (w, h) = size.unwrap_or((0, 0));
        let lf = LightField::new(u, v, h, w, data).map_err(|e| LfError::file(dir, e))?;
        lf.check_values(&dir.display().to_string())?;
        Ok(lf)
    }

    /// Reads `path`: a folder of views (`grid` for names that follow no known layout) or a
    /// `.npy` file.
    pub fn read(path: &Path, grid: Option<(usize, usize)>) -> Result<LightField> {
        if path.is_dir() {
            LightField::read_folder(path, grid)
        } else {
            LightField::read_npy(path)
        }
    }

    /// Writes the light field as float32 `.npy` of shape (U, V, H, W, 3), atomically.
    pub fn write_npy(&self, path: &Path) -> Result<()> {
        Ok(kit::npy::write_f32(path, &self.shape(), &self.data)?)
    }

    /// Like [`LightField::write_npy`], into `staged`: the file lands only when `staged` is
    /// committed, together with the command's other outputs (all or none).
    pub fn stage_npy(&self, staged: &mut kit::output::Staged, path: &Path) -> Result<()> {
        Ok(kit::npy::stage_f32(staged, path, &self.shape(), &self.data)?)
    }

    /// Clamps every sample into [0, 1], the range every input holds, after checking that
    /// every one is finite: decoded samples overshoot by the quantisation error, and clamped
    /// they read back as a valid input (decode, then encode, round-trips).
    pub fn clamp_to_input_range(&mut self, what: &str) -> Result<()> {
        use rayon::prelude::*;
        if let Some(i) = self.data.par_iter().position_any(|x| !x.is_finite()) {
            return Err(LfError::NotFinite { what: what.into(), index: i, value: self.data[i] });
        }
        self.data.par_iter_mut().for_each(|x| *x = x.clamp(0.0, 1.0));
        Ok(())
    }
}

/// Refuses NaN, infinities and values outside [0, 1] in `data`, samples `first..` of a
/// light field (the index in the message counts from the light field's first sample).
pub fn check_samples(data: &[f32], first: usize, what: &str) -> Result<()> {
    use rayon::prelude::*;
    // One parallel pass for the common case (NaN fails the range test too); the slow
    // search for a message only runs on bad input.
    if data.par_iter().all(|x| (0.0..=1.0).contains(x)) {
        return Ok(());
    }
    if let Some(i) = data.iter().position(|x| !x.is_finite()) {
        return Err(LfError::NotFinite { what: what.into(), index: first + i, value: data[i] });
    }
    let i = data.iter().position(|&x| !(0.0..=1.0).contains(&x)).expect("a sample outside [0, 1]");
    Err(LfError::OutOfRange { what: what.into(), index: first + i, value: data[i] })
}

/// Mean squared error between two sample arrays (f64 accumulation).
pub fn mse(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let sum: f64 = a.iter().zip(b).map(|(&x, &y)| (x as f64 - y as f64).powi(2)).sum();
    sum / a.len().max(1) as f64
}

/// PSNR in dB for values in [0, 1] (infinite for identical inputs).
pub fn psnr(a: &[f32], b: &[f32]) -> f64 {
    -10.0 * mse(a, b).log10()
}
