//! Turning image files into the gray images the metric reads, as the release does:
//! MATLAB's `rgb2gray` (rounded back to the input's integer type), values on the 0..255
//! scale.
//!
//! - 8-bit inputs keep their integer values (and the release's uint8 LUT lookup).
//! - Any other input whose every sample is an 8-bit level `k / 255` (a float TIFF or float
//!   array saved from an 8-bit image, a 16-bit file whose values are multiples of 257) is
//!   that 8-bit image and is scored exactly as it: the same integers, the same rounding of
//!   `rgb2gray`, the same LUT. A sample counts as a level within [`EIGHT_BIT_TOLERANCE`].
//! - 16-bit inputs, which the release cannot read (its LUT has 256 entries), are mapped to
//!   the 0..255 scale as `v / 257` after `rgb2gray` rounded to 16 bits, and go through the
//!   LUT formula without the uint8 lookup.
//! - Other float inputs (values in [0, 1]) are scaled to 0..255 and `rgb2gray` is not
//!   rounded (a float image has no integer type to round back to); the LUT formula applies
//!   without the uint8 lookup, as for 16-bit inputs.

use std::path::Path;

use crate::constants::{LUT_EXPONENT, LUT_K, LUT_MAX_8BIT, MIN_SIDE, RGB_TO_GRAY};
use crate::MadError;

/// How far from an integer `255 v` may be for a float sample `v` to count as an 8-bit level:
/// `k / 255` in float32 is within 2e-5 of one, 16-bit levels that are not 8-bit ones are at
/// least 1/257 away.
pub const EIGHT_BIT_TOLERANCE: f64 = 1e-4;

/// A gray image on the 0..255 scale, row-major, row 0 at the top.
#[derive(Clone, Debug, PartialEq)]
pub struct GrayImage {
    pub width: usize,
    pub height: usize,
    pub values: Vec<f64>,
    /// True for 8-bit sources: lightness goes through the release's uint8 LUT lookup.
    pub eight_bit: bool,
}

/// Where samples come from, which decides the rounding the release applies.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Source {
    /// 8-bit levels, as integers 0..=255 after [`Source::level`].
    Eight,
    /// 16-bit integers.
    Sixteen,
    /// Floats in [0, 1] that are not all 8-bit levels.
    Float,
}

impl Source {
    /// The source of samples in [0, 1] decoded from a file of `bits` bits per sample.
    fn of(samples: &[f32], bits: u32) -> Source {
        let levels = || {
            samples.iter().all(|&v| {
                let k = v as f64 * 255.0;
                (k - k.round()).abs() <= EIGHT_BIT_TOLERANCE
            })
        };
        match bits {
            8 => Source::Eight,
            _ if levels() => Source::Eight,
            16 => Source::Sixteen,
            _ => Source::Float,
        }
    }

    /// A sample in [0, 1] on the scale `rgb2gray` works in: the source's integers, or 0..255.
    fn level(self, v: f32) -> f64 {
        match self {
            Source::Eight => (v as f64 * 255.0).round(),
            Source::Sixteen => (v as f64 * 65535.0).round(),
            Source::Float => v as f64 * 255.0,
        }
    }

    /// `rgb2gray`'s rounding back to the source's integer type, then the 0..255 scale.
    fn finish(self, gray: f64) -> f64 {
        match self {
            Source::Eight => gray.round().min(255.0),
            Source::Sixteen => gray.round().min(65535.0) / 257.0,
            Source::Float => gray.min(255.0),
        }
    }
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

    /// The gray image of a decoded image ([`kit::image::load`]): samples in [0, 1], gray or
    /// RGB, from a file of `source_bits` bits per sample (8, 16, or 32 for floats), converted
    /// by the rules of this module.
    pub fn from_image(img: &kit::image::ImageF32) -> GrayImage {
        let source = Source::of(&img.data, img.source_bits);
        let n = img.width * img.height;
        let values: Vec<f64> = if img.channels == 3 {
            (0..n)
                .map(|i| {
                    let p = &img.data[3 * i..3 * i + 3];
                    source.finish((0..3).map(|c| RGB_TO_GRAY[c] * source.level(p[c])).sum::<f64>())
                })
                .collect()
        } else {
            img.data.iter().map(|&v| source.finish(source.level(v))).collect()
        };
        GrayImage { width: img.width, height: img.height, values, eight_bit: source == Source::Eight }
    }

    /// The gray image of float samples in [0, 1] (`channels` 1 for gray, 3 for RGB,
    /// interleaved, row-major): an image whose every sample is an 8-bit level `k / 255`
    /// scores as that 8-bit image, any other as a float image (this module's rules). For
    /// callers holding arrays (the Python bindings); refuses a wrong length, a channel count
    /// other than 1 or 3, and a sample that is not finite or outside [0, 1].
    pub fn from_float(width: usize, height: usize, channels: usize, samples: &[f32]) -> Result<GrayImage, MadError> {
        let invalid = |message: String| MadError::InvalidImage(message);
        if channels != 1 && channels != 3 {
            return Err(invalid(format!("{channels} channels; gray (1) or RGB (3) are scored")));
        }
        if width.checked_mul(height).and_then(|n| n.checked_mul(channels)) != Some(samples.len()) {
            return Err(invalid(format!(
                "{} samples for a {width}x{height} image of {channels} channels",
                samples.len()
            )));
        }
        if let Some(i) = samples.iter().position(|v| !(0.0..=1.0).contains(v)) {
            return Err(invalid(format!("sample {i} is {}; float samples must lie in [0, 1]", samples[i])));
        }
        let img = kit::image::ImageF32 { width, height, channels, data: samples.to_vec(), source_bits: 32 };
        Ok(GrayImage::from_image(&img))
    }

    /// Loads any image file kit reads (EXIF orientation applied) and converts it to gray.
    pub fn load(path: &Path) -> Result<GrayImage, MadError> {
        Ok(GrayImage::from_image(&kit::image::load(path)?))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Floats that are 8-bit levels are the 8-bit image (values and LUT path); other floats
    /// keep their values unrounded on the 0..255 scale; bad samples are refused.
    #[test]
    fn float_samples_follow_the_8_bit_rule() {
        let levels: Vec<u8> = vec![0, 17, 128, 254, 255, 3];
        let rgb: Vec<f32> = levels.iter().flat_map(|&v| [v, v / 3, 255 - v]).map(|v| v as f32 / 255.0).collect();
        let as_float = GrayImage::from_float(3, 2, 3, &rgb).unwrap();
        let as_u8 = kit::image::ImageF32 { width: 3, height: 2, channels: 3, data: rgb.clone(), source_bits: 8 };
        assert_eq!(as_float, GrayImage::from_image(&as_u8));
        assert!(as_float.eight_bit && as_float.values.iter().all(|v| v.fract() == 0.0));
        // A float image off the levels: rgb2gray unrounded, no uint8 LUT.
        let mut off = rgb.clone();
        off[0] = 0.3;
        let float = GrayImage::from_float(3, 2, 3, &off).unwrap();
        assert!(!float.eight_bit);
        let want: f64 = [0.3f32, rgb[1], rgb[2]].iter().zip(RGB_TO_GRAY).map(|(&v, c)| c * v as f64 * 255.0).sum();
        assert!((float.values[0] - want).abs() < 1e-12, "{} against {want}", float.values[0]);
        for (samples, channels, says) in
            [(vec![0.5; 6], 2, "channels"), (vec![0.5; 5], 1, "samples"), (vec![f32::NAN; 6], 1, "[0, 1]")]
        {
            let err = GrayImage::from_float(3, 2, channels, &samples).unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
    }
}
