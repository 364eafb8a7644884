//! Turning image files into the gray images the metric reads, as the release does:
//! MATLAB's `rgb2gray` (rounded back to the input's integer type), values on the 0..255
//! scale. 8-bit inputs keep their integer values (and the release's uint8 LUT lookup);
//! 16-bit inputs, which the release cannot read (its LUT has 256 entries), are mapped to
//! the 0..255 scale as `v / 257` and go through the LUT formula without the uint8 lookup.

use std::path::Path;

use crate::constants::{LUT_EXPONENT, LUT_K, LUT_MAX_8BIT, MIN_SIDE, RGB_TO_GRAY};
use crate::MadError;

/// A gray image on the 0..255 scale, row-major, row 0 at the top.
#[derive(Clone, Debug, PartialEq)]
pub struct GrayImage {
    pub width: usize,
    pub height: usize,
    pub values: Vec<f64>,
    /// True for 8-bit sources: lightness goes through the release's uint8 LUT lookup.
    pub eight_bit: bool,
}

impl GrayImage {
    /// A gray image from 8-bit values.
    pub fn from_u8(width: usize, height: usize, pixels: &[u8]) -> GrayImage {
        assert_eq!(pixels.len(), width * height);
        GrayImage { width, height, values: pixels.iter().map(|&v| v as f64).collect(), eight_bit: true }
    }

    /// A gray image from 16-bit values.
    pub fn from_u16(width: usize, height: usize, pixels: &[u16]) -> GrayImage {
        assert_eq!(pixels.len(), width * height);
        GrayImage { width, height, values: pixels.iter().map(|&v| v as f64 / 257.0).collect(), eight_bit: false }
    }

    /// Loads any image file kit reads (EXIF orientation applied) and converts it to gray.
    pub fn load(path: &Path) -> Result<GrayImage, MadError> {
        let img = kit::image::load(path)?;
        let full_scale = if img.source_bits == 16 { 65535.0 } else { 255.0 };
        // kit decodes to [0, 1]; the source integers are recovered exactly by rounding.
        let integer = |v: f32| (v as f64 * full_scale).round();
        let n = img.width * img.height;
        let gray: Vec<f64> = if img.channels == 3 {
            (0..n)
                .map(|i| {
                    let p = &img.data[3 * i..3 * i + 3];
                    // rgb2gray on an integer image rounds back to that integer type.
                    (0..3).map(|c| RGB_TO_GRAY[c] * integer(p[c])).sum::<f64>().round().min(full_scale)
                })
                .collect()
        } else {
            img.data.iter().map(|&v| integer(v)).collect()
        };
        let eight_bit = img.source_bits != 16;
        let values = if eight_bit { gray } else { gray.into_iter().map(|v| v / 257.0).collect() };
        Ok(GrayImage { width: img.width, height: img.height, values, eight_bit })
    }

    /// The lightness the detection stage starts from: `k * v^(2.2/3)`.
    pub fn lightness(&self, v: f64) -> f64 {
        lightness(v, self.eight_bit)
    }
}

/// `k * v^(2.2/3)`, with the uint8 LUT's saturation for 8-bit inputs.
pub fn lightness(v: f64, eight_bit: bool) -> f64 {
    let v = if eight_bit { v.min(LUT_MAX_8BIT) } else { v };
    LUT_K * v.powf(LUT_EXPONENT)
}

/// Checks that two images can be compared: same size, at least `MIN_SIDE` on each side.
pub fn check_pair(reference: &GrayImage, distorted: &GrayImage) -> Result<(), MadError> {
    if (reference.width, reference.height) != (distorted.width, distorted.height) {
        return Err(MadError::SizeMismatch {
            reference: (reference.width, reference.height),
            distorted: (distorted.width, distorted.height),
        });
    }
    if reference.width < MIN_SIDE || reference.height < MIN_SIDE {
        return Err(MadError::TooSmall { width: reference.width, height: reference.height, min: MIN_SIDE });
    }
    Ok(())
}

/// The size an image file declares in its header, without decoding it (`None` where the
/// header cannot be read: the loader then says why). Before the EXIF orientation, which
/// may swap the sides but never changes their product, all the memory estimates use.
fn declared_size(path: &Path) -> Option<(u64, u64)> {
    let (file, _) = kit::input::open_regular(path).ok()?;
    let reader = image::ImageReader::new(std::io::BufReader::new(file)).with_guessed_format().ok()?;
    let (w, h) = reader.into_dimensions().ok()?;
    Some((w as u64, h as u64))
}

/// Loads a pair and checks it. `fits(width, height)` is the scoring path's memory check
/// ([`crate::cpu::check_budget`], [`crate::gpu::GpuMad::check_budget`]): it runs on the size
/// the reference declares, before either image is decoded, so a pair too large for the
/// memory budget is refused at once instead of after a long decode.
pub fn load_pair(
    reference: &Path,
    distorted: &Path,
    fits: impl Fn(u64, u64) -> Result<(), MadError>,
) -> Result<(GrayImage, GrayImage), MadError> {
    if let Some((width, height)) = declared_size(reference) {
        fits(width, height)?;
    }
    let r = GrayImage::load(reference)?;
    let d = GrayImage::load(distorted)?;
    check_pair(&r, &d)?;
    Ok((r, d))
}
