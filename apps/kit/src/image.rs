//! The one image loader and the one image writer of every binary.
//!
//! Reading sniffs the content (the extension does not matter), applies the EXIF orientation
//! (a phone photo taken upright is loaded upright), accepts 8/16-bit gray, gray+alpha, RGB
//! and RGBA, and checks the decoded size against the [`crate::budget`] before decoding.
//! Writing picks the format from the extension ([`IMAGE_EXTENSIONS`]).

use std::io::BufReader;
use std::path::Path;

use image::{DynamicImage, ImageDecoder, ImageEncoder};

use crate::error::{KitError, Result};
pub use crate::output::IMAGE_EXTENSIONS;

/// The formats every image input accepts, for help texts.
pub const INPUT_FORMATS: &str = "PNG, JPEG, TIFF, WebP or BMP; 8/16-bit; gray, RGB, with or without alpha";

/// A decoded image as f32 samples in [0, 1], interleaved, row 0 at the top.
#[derive(Clone, Debug)]
pub struct ImageF32 {
    pub width: usize,
    pub height: usize,
    /// 1 (gray) or 3 (RGB); alpha is dropped on load.
    pub channels: usize,
    pub data: Vec<f32>,
    /// Bits per sample of the source file (8 or 16), so apps can report or rescale.
    pub source_bits: u32,
}

impl ImageF32 {
    /// The sample at (x, y, channel c).
    pub fn at(&self, x: usize, y: usize, c: usize) -> f32 {
        self.data[(y * self.width + x) * self.channels + c]
    }
}

/// Decodes `path` upright, after checking that the decoded pixels plus `extra_per_pixel`
/// bytes per pixel (what the caller builds from them) fit the budget.
fn decode(path: &Path, extra_per_pixel: u64) -> Result<DynamicImage> {
    let (file, _) = crate::input::open_regular(path)?;
    let mut reader =
        image::ImageReader::new(BufReader::new(file)).with_guessed_format().map_err(|e| KitError::file(path, e))?;
    if reader.format().is_none() {
        return Err(KitError::file(path, format!("not an image this program reads ({INPUT_FORMATS})")));
    }
    let budget = crate::budget::get();
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(budget);
    reader.limits(limits);
    let mut decoder = reader.into_decoder().map_err(|e| KitError::file(path, format!("cannot decode image: {e}")))?;
    let (w, h) = decoder.dimensions();
    if w == 0 || h == 0 {
        return Err(KitError::file(path, "image is empty"));
    }
    let pixels = w as u64 * h as u64;
    let bytes = decoder.total_bytes().saturating_add(pixels.saturating_mul(extra_per_pixel));
    crate::budget::check(bytes, format!("decoding the {w}x{h} image {}", path.display()))?;
    let orientation = decoder.orientation().unwrap_or(image::metadata::Orientation::NoTransforms);
    let mut img =
        DynamicImage::from_decoder(decoder).map_err(|e| KitError::file(path, format!("cannot decode image: {e}")))?;
    img.apply_orientation(orientation);
    Ok(img)
}

/// Loads an image as [`ImageF32`]: gray stays one channel, colour becomes RGB, alpha is
/// dropped.
pub fn load(path: &Path) -> Result<ImageF32> {
    // The f32 copy, up to 3 channels of 4 bytes, and one intermediate conversion.
    let img = decode(path, 3 * 4 * 2)?;
    let (width, height) = (img.width() as usize, img.height() as usize);
    let color = img.color();
    let source_bits = if color.bytes_per_pixel() / color.channel_count() >= 2 { 16 } else { 8 };
    let (channels, data) = if color.has_color() {
        (3, img.into_rgb32f().into_raw())
    } else {
        let l = img.into_luma16();
        (1, l.into_raw().into_iter().map(|v| v as f32 / 65535.0).collect())
    };
    Ok(ImageF32 { width, height, channels, data, source_bits })
}

/// Loads an image as 8-bit RGBA: (width, height, bytes).
pub fn load_rgba8(path: &Path) -> Result<(usize, usize, Vec<u8>)> {
    let rgba = decode(path, 4)?.into_rgba8();
    Ok((rgba.width() as usize, rgba.height() as usize, rgba.into_raw()))
}

/// Options of an image output.
#[derive(Clone, Copy, Debug)]
pub struct SaveOptions {
    /// JPEG quality, 1-100.
    pub jpeg_quality: u8,
}

impl Default for SaveOptions {
    fn default() -> Self {
        SaveOptions { jpeg_quality: 92 }
    }
}

/// Pixel layouts an image output can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Gray8,
    Rgb8,
    Rgba8,
    Gray16,
    Rgb16,
}

impl Layout {
    fn color(self) -> image::ExtendedColorType {
        match self {
            Layout::Gray8 => image::ExtendedColorType::L8,
            Layout::Rgb8 => image::ExtendedColorType::Rgb8,
            Layout::Rgba8 => image::ExtendedColorType::Rgba8,
            Layout::Gray16 => image::ExtendedColorType::L16,
            Layout::Rgb16 => image::ExtendedColorType::Rgb16,
        }
    }
}

/// The largest side each output format stores: WebP's 14-bit sizes, JPEG's 16-bit ones,
/// BMP's signed 32-bit ones; PNG's and TIFF's are 31 and 32 bits.
fn largest_side(format: &str) -> u64 {
    match format {
        "webp" => 16383,
        "jpg" | "jpeg" => 65535,
        "bmp" | "png" => i32::MAX as u64,
        _ => u32::MAX as u64,
    }
}

/// Refuses a `width x height` image of `layout` that the format of `path`'s extension
/// cannot hold, so that a command checks this with its other outputs, before the work.
/// (TIFF and BMP files, as written here, address at most 4 GiB of samples.)
pub fn check_size(path: &Path, width: u64, height: u64, layout: Layout) -> Result<()> {
    let format = crate::output::format_of(path, IMAGE_EXTENSIONS)?;
    let side = largest_side(&format);
    if width == 0 || height == 0 || width > side || height > side {
        return Err(KitError::file(
            path,
            format!("a {width}x{height} image does not fit .{format}, whose sides are 1 to {side} pixels"),
        ));
    }
    let bytes = width.saturating_mul(height).saturating_mul(layout.color().bits_per_pixel() as u64 / 8);
    if matches!(format.as_str(), "tif" | "tiff" | "bmp") && bytes > u32::MAX as u64 {
        return Err(KitError::file(
            path,
            format!("a {width}x{height} image takes {bytes} bytes, over the 4 GiB a .{format} file holds"),
        ));
    }
    Ok(())
}

/// Writes an image atomically in the format its extension names, with the default
/// [`SaveOptions`]. `bytes` holds the samples of `layout` (16-bit samples in native byte order).
pub fn save(path: &Path, width: usize, height: usize, bytes: &[u8], layout: Layout) -> Result<()> {
    let mut staged = crate::output::Staged::new();
    stage(&mut staged, path, width, height, bytes, layout, SaveOptions::default())?;
    staged.commit()
}

/// Like [`save`] with `options`, into `staged`: the image lands only when `staged` is
/// committed, together with the command's other outputs (all or none).
pub fn stage(
    staged: &mut crate::output::Staged,
    path: &Path,
    width: usize,
    height: usize,
    bytes: &[u8],
    layout: Layout,
    options: SaveOptions,
) -> Result<()> {
    let format = crate::output::format_of(path, IMAGE_EXTENSIONS)?;
    check_size(path, width as u64, height as u64, layout)?;
    let color = layout.color();
    let expected = width as u64 * height as u64 * color.bits_per_pixel() as u64 / 8;
    if bytes.len() as u64 != expected {
        return Err(KitError::file(
            path,
            format!("{} bytes for a {width}x{height} {layout:?} image that needs {expected}", bytes.len()),
        ));
    }
    let (w, h) = (width as u32, height as u32);
    staged.write(path, |out| -> std::result::Result<(), image::ImageError> {
        match format.as_str() {
            "png" => image::codecs::png::PngEncoder::new(out).write_image(bytes, w, h, color),
            "jpg" | "jpeg" => {
                let q = options.jpeg_quality.clamp(1, 100);
                // JPEG holds 8 bits and no alpha: convert where needed.
                let img = to_dynamic(bytes, w, h, layout)?;
                let rgb = if matches!(layout, Layout::Gray8 | Layout::Gray16) {
                    DynamicImage::ImageLuma8(img.into_luma8())
                } else {
                    DynamicImage::ImageRgb8(img.into_rgb8())
                };
                rgb.write_with_encoder(image::codecs::jpeg::JpegEncoder::new_with_quality(out, q))
            }
            "tif" | "tiff" => {
                // TIFF's encoder seeks; the atomic writer streams, so encode in memory first.
                let mut encoded = std::io::Cursor::new(Vec::new());
                image::codecs::tiff::TiffEncoder::new(&mut encoded).write_image(bytes, w, h, color)?;
                std::io::Write::write_all(out, encoded.get_ref()).map_err(image::ImageError::IoError)
            }
            "bmp" => {
                let img = to_dynamic(bytes, w, h, layout)?;
                let img = if matches!(layout, Layout::Rgba8) { img } else { DynamicImage::ImageRgb8(img.into_rgb8()) };
                img.write_with_encoder(image::codecs::bmp::BmpEncoder::new(out))
            }
            _ => {
                let img = to_dynamic(bytes, w, h, layout)?;
                let img =
                    if matches!(layout, Layout::Rgba8) { img } else { DynamicImage::ImageRgba8(img.into_rgba8()) };
                img.write_with_encoder(image::codecs::webp::WebPEncoder::new_lossless(out))
            }
        }
    })
}

fn to_dynamic(bytes: &[u8], w: u32, h: u32, layout: Layout) -> std::result::Result<DynamicImage, image::ImageError> {
    let bad = || {
        image::ImageError::Parameter(image::error::ParameterError::from_kind(
            image::error::ParameterErrorKind::DimensionMismatch,
        ))
    };
    let words = || bytes.chunks_exact(2).map(|c| u16::from_ne_bytes([c[0], c[1]])).collect::<Vec<u16>>();
    Ok(match layout {
        Layout::Gray8 => DynamicImage::ImageLuma8(image::GrayImage::from_raw(w, h, bytes.to_vec()).ok_or_else(bad)?),
        Layout::Rgb8 => DynamicImage::ImageRgb8(image::RgbImage::from_raw(w, h, bytes.to_vec()).ok_or_else(bad)?),
        Layout::Rgba8 => DynamicImage::ImageRgba8(image::RgbaImage::from_raw(w, h, bytes.to_vec()).ok_or_else(bad)?),
        Layout::Gray16 => DynamicImage::ImageLuma16(image::ImageBuffer::from_raw(w, h, words()).ok_or_else(bad)?),
        Layout::Rgb16 => DynamicImage::ImageRgb16(image::ImageBuffer::from_raw(w, h, words()).ok_or_else(bad)?),
    })
}

/// Writes 8-bit RGB (3 bytes per pixel, row 0 at the top) in the format of the extension.
pub fn save_rgb8(path: &Path, width: usize, height: usize, rgb: &[u8]) -> Result<()> {
    save(path, width, height, rgb, Layout::Rgb8)
}

/// Writes 8-bit RGBA in the format of the extension.
pub fn save_rgba8(path: &Path, width: usize, height: usize, rgba: &[u8]) -> Result<()> {
    save(path, width, height, rgba, Layout::Rgba8)
}

/// Writes 8-bit gray in the format of the extension.
pub fn save_gray8(path: &Path, width: usize, height: usize, gray: &[u8]) -> Result<()> {
    save(path, width, height, gray, Layout::Gray8)
}

/// Converts a value in [0, 1] to 8 bits (clamped, rounded; NaN becomes 0).
pub fn to_u8(v: f32) -> u8 {
    (v.clamp(0.0, 1.0) * 255.0 + 0.5) as u8
}

/// Converts a value in [0, 1] to 16 bits (clamped, rounded; NaN becomes 0).
pub fn to_u16(v: f32) -> u16 {
    (v.clamp(0.0, 1.0) * 65535.0 + 0.5) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes a format cannot hold are refused with one line before any encoding, at the
    /// format's limit and not below it.
    #[test]
    fn sizes_a_format_cannot_hold_are_refused() {
        let ok = |name: &str, w, h| check_size(Path::new(name), w, h, Layout::Rgb8);
        assert!(ok("a.webp", 16383, 16383).is_ok() && ok("a.jpg", 65535, 1).is_ok() && ok("a.png", 100_000, 1).is_ok());
        for (name, w, h, says) in [
            ("a.webp", 16384, 1, "sides are 1 to 16383"),
            ("a.JPEG", 1, 65536, "sides are 1 to 65535"),
            ("a.tif", 40_000, 40_000, "over the 4 GiB"),
            ("a.bmp", 0, 5, "sides are 1 to"),
        ] {
            let err = ok(name, w, h).unwrap_err().to_string();
            assert!(err.contains(says) && !err.contains('\n'), "{name}: {err}");
        }
        // Through the writer too: nothing is encoded or left behind.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wide.webp");
        let err = save(&path, 16384, 1, &[0; 3 * 16384], Layout::Rgb8).unwrap_err().to_string();
        assert!(err.contains("16383") && !path.exists(), "{err}");
    }

    #[test]
    fn every_format_round_trips_by_extension() {
        let dir = tempfile::tempdir().unwrap();
        let (w, h) = (5usize, 3usize);
        let rgb: Vec<u8> = (0..w * h * 3).map(|i| (i * 17 % 256) as u8).collect();
        for ext in IMAGE_EXTENSIONS {
            let p = dir.path().join(format!("a.{ext}"));
            save_rgb8(&p, w, h, &rgb).unwrap();
            let back = load(&p).unwrap();
            assert_eq!((back.width, back.height, back.channels), (w, h, 3), "{ext}");
            let bytes = std::fs::read(&p).unwrap();
            let guessed = image::guess_format(&bytes).unwrap();
            let want = image::ImageFormat::from_extension(ext).unwrap();
            assert_eq!(guessed, want, "{ext} holds {guessed:?}");
        }
        assert!(save_rgb8(&dir.path().join("a.gif"), w, h, &rgb).is_err());
    }

    #[test]
    fn exif_orientation_is_applied() {
        // A 4x2 JPEG whose EXIF says "rotate 90 degrees clockwise" (orientation 6) loads 2x4.
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("p.jpg");
        save_rgb8(&plain, 4, 2, &[200u8; 4 * 2 * 3]).unwrap();
        let bytes = std::fs::read(&plain).unwrap();
        let rotated = dir.path().join("r.jpg");
        std::fs::write(&rotated, crate::fuzz::with_exif_orientation(&bytes, 6)).unwrap();
        let img = load(&rotated).unwrap();
        assert_eq!((img.width, img.height), (2, 4));
        // The extension does not matter when reading.
        let renamed = dir.path().join("r.img");
        std::fs::copy(&rotated, &renamed).unwrap();
        assert_eq!(load(&renamed).unwrap().width, 2);
    }

    #[test]
    fn oversized_images_are_refused_before_decoding() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.png");
        // A 4000x4000 gray PNG of zeros compresses to a few KB.
        save_gray8(&p, 4000, 4000, &vec![0u8; 4000 * 4000]).unwrap();
        crate::budget::set(1 << 20);
        let err = load(&p).unwrap_err().to_string();
        crate::budget::set(crate::budget::default_bytes());
        assert!(err.contains("memory budget"), "{err}");
    }
}
