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
pub const INPUT_FORMATS: &str =
    "PNG, JPEG, TIFF, WebP, BMP, PGM/PPM or TGA; 8/16-bit (and 32-bit float RGB TIFF); gray, RGB, with or without alpha";

/// A decoded image as f32 samples in [0, 1], interleaved, row 0 at the top.
#[derive(Clone, Debug)]
pub struct ImageF32 {
    pub width: usize,
    pub height: usize,
    /// 1 (gray) or 3 (RGB); alpha is dropped on load.
    pub channels: usize,
    pub data: Vec<f32>,
    /// Bits per sample of the source file: 8 or 16 for integer samples, 32 for a float
    /// TIFF (whose samples are clamped to [0, 1]), so apps can report or rescale.
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
    let mut decoder = reader.into_decoder().map_err(|e| KitError::file(path, undecodable(&e)))?;
    let (w, h) = decoder.dimensions();
    if w == 0 || h == 0 {
        return Err(KitError::file(path, "image is empty"));
    }
    let pixels = w as u64 * h as u64;
    let bytes = decoder.total_bytes().saturating_add(pixels.saturating_mul(extra_per_pixel));
    crate::budget::check(bytes, format!("decoding the {w}x{h} image {}", path.display()))?;
    let orientation = decoder.orientation().unwrap_or(image::metadata::Orientation::NoTransforms);
    let mut img = DynamicImage::from_decoder(decoder).map_err(|e| KitError::file(path, undecodable(&e)))?;
    img.apply_orientation(orientation);
    // A float TIFF holds any value: clamp it to the [0, 1] of every other image (NaN is 0).
    let clamp =
        |samples: &mut [f32]| samples.iter_mut().for_each(|v| *v = if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) });
    match &mut img {
        DynamicImage::ImageRgb32F(buffer) => clamp(buffer),
        DynamicImage::ImageRgba32F(buffer) => clamp(buffer),
        _ => {}
    }
    Ok(img)
}

/// The TIFF sample layouts the decoder reads, for the message refusing the others.
const TIFF_SAMPLES: &str = "TIFF is read with 8 or 16-bit unsigned samples (gray, gray+alpha, RGB, RGBA or CMYK) \
                            or 32-bit float RGB or RGBA samples (clamped to [0, 1])";

/// Why an image cannot be decoded: a TIFF whose samples the decoder does not read says
/// which ones it reads, instead of the decoder's `Unknown(32)`.
fn undecodable(error: &image::ImageError) -> String {
    use image::error::{ImageFormatHint, UnsupportedErrorKind};
    if let image::ImageError::Unsupported(unsupported) = error {
        if unsupported.format_hint() == ImageFormatHint::Exact(image::ImageFormat::Tiff) {
            let what = match unsupported.kind() {
                UnsupportedErrorKind::Color(image::ExtendedColorType::Unknown(bits)) => {
                    format!("{bits} bits per pixel: 32-bit gray, for instance")
                }
                UnsupportedErrorKind::Color(color) => format!("{color:?} samples"),
                UnsupportedErrorKind::GenericFeature(feature) => feature.to_lowercase(),
                _ => error.to_string(),
            };
            return format!(
                "a TIFF whose samples are not read ({what}); {TIFF_SAMPLES}: convert it, to 16-bit for instance"
            );
        }
    }
    format!("cannot decode image: {error}")
}

/// Loads an image as [`ImageF32`]: gray stays one channel, colour becomes RGB, alpha is
/// dropped.
pub fn load(path: &Path) -> Result<ImageF32> {
    load_with_alpha(path).map(|(img, _)| img)
}

/// [`load`], and for an image with an alpha channel the number of its pixels that are not
/// fully opaque (None without alpha), so that a caller that ignores alpha can say so.
pub fn load_with_alpha(path: &Path) -> Result<(ImageF32, Option<usize>)> {
    // The f32 copy, up to 3 channels of 4 bytes, one intermediate conversion, and the
    // alpha count's 8-bit copy.
    let img = decode(path, 3 * 4 * 2 + 4)?;
    let (width, height) = (img.width() as usize, img.height() as usize);
    let color = img.color();
    let source_bits = 8 * u32::from(color.bytes_per_pixel() / color.channel_count());
    let translucent = color.has_alpha().then(|| img.to_rgba8().pixels().filter(|p| p[3] < 255).count());
    let (channels, data) = if color.has_color() {
        (3, img.into_rgb32f().into_raw())
    } else {
        let l = img.into_luma16();
        (1, l.into_raw().into_iter().map(|v| v as f32 / 65535.0).collect())
    };
    Ok((ImageF32 { width, height, channels, data, source_bits }, translucent))
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

    /// A little-endian TIFF of one 32-bit float gray strip: `width x height` samples of `v`.
    fn gray_f32_tiff(width: u32, height: u32, v: f32) -> Vec<u8> {
        let data = width * height * 4;
        // Tag, type (3: SHORT, 4: LONG), value; sorted by tag.
        let entries: [(u16, u16, u32); 10] = [
            (256, 4, width),
            (257, 4, height),
            (258, 3, 32),      // bits per sample
            (259, 3, 1),       // no compression
            (262, 3, 1),       // black is zero
            (273, 4, 8 + 126), // the strip follows the IFD
            (277, 3, 1),       // samples per pixel
            (278, 4, height),  // rows per strip
            (279, 4, data),    // strip bytes
            (339, 3, 3),       // sample format: IEEE float
        ];
        let mut out = b"II*\0".to_vec();
        out.extend_from_slice(&8u32.to_le_bytes());
        out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        for (tag, kind, value) in entries {
            out.extend_from_slice(&tag.to_le_bytes());
            out.extend_from_slice(&kind.to_le_bytes());
            out.extend_from_slice(&1u32.to_le_bytes());
            out.extend_from_slice(&value.to_le_bytes());
        }
        out.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(out.len(), 8 + 126);
        for _ in 0..width * height {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// A 32-bit float RGB TIFF is read, its samples clamped to [0, 1] (NaN: 0); a float
    /// layout the decoder does not read (gray) is refused naming the file and the layouts
    /// that are read, not with the decoder's `Unknown(32)`.
    #[test]
    fn float_tiffs_are_read_clamped_or_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let rgb = dir.path().join("rgb.tif");
        let samples = [-0.5f32, 0.25, 2.0, f32::NAN, 1.0, 0.0];
        let bytes: Vec<u8> = samples.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let mut encoded = std::io::Cursor::new(Vec::new());
        image::codecs::tiff::TiffEncoder::new(&mut encoded)
            .write_image(&bytes, 2, 1, image::ExtendedColorType::Rgb32F)
            .unwrap();
        std::fs::write(&rgb, encoded.get_ref()).unwrap();
        let img = load(&rgb).unwrap();
        assert_eq!((img.width, img.height, img.channels, img.source_bits), (2, 1, 3, 32));
        assert_eq!(img.data, [0.0, 0.25, 1.0, 0.0, 1.0, 0.0]);
        let (w, h, rgba) = load_rgba8(&rgb).unwrap();
        assert_eq!((w, h), (2, 1));
        assert_eq!(rgba, [0, 64, 255, 255, 0, 255, 0, 255]);

        let gray = dir.path().join("gray.tif");
        std::fs::write(&gray, gray_f32_tiff(3, 2, 0.5)).unwrap();
        for err in [load(&gray).unwrap_err().to_string(), load_rgba8(&gray).unwrap_err().to_string()] {
            assert!(err.starts_with(&format!("{}: a TIFF whose samples are not read", gray.display())), "{err}");
            assert!(err.contains("32-bit float RGB or RGBA") && err.contains("16-bit"), "{err}");
            assert!(!err.contains("Unknown(") && !err.contains('\n'), "{err}");
        }
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

    /// PGM and PPM (binary and plain, 8 and 16-bit), as IQA data sets ship them, are read by
    /// content like every other input: gray stays one channel, 16-bit keeps its bits.
    #[test]
    fn pgm_and_ppm_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, bytes: &[u8]| crate::testing::write_file(dir.path(), name, bytes);
        let gray = load(&file("a.pgm", b"P5\n3 2\n255\n\x00\x33\xff\x10\x20\x30")).unwrap();
        assert_eq!((gray.width, gray.height, gray.channels, gray.source_bits), (3, 2, 1, 8));
        assert_eq!(gray.data.iter().map(|&v| to_u8(v)).collect::<Vec<_>>(), [0, 0x33, 0xff, 0x10, 0x20, 0x30]);
        // 16-bit samples are big-endian; the extension does not matter.
        let deep = load(&file("deep.img", b"P5 2 1 65535 \x01\x02\xff\xfe")).unwrap();
        assert_eq!((deep.channels, deep.source_bits), (1, 16));
        assert_eq!(deep.data.iter().map(|&v| to_u16(v)).collect::<Vec<_>>(), [0x0102, 0xfffe]);
        let plain = load(&file("plain.pgm", b"P2\n2 1\n255\n7 200\n")).unwrap();
        assert_eq!(plain.data.iter().map(|&v| to_u8(v)).collect::<Vec<_>>(), [7, 200]);
        let rgb = load(&file("c.ppm", b"P6\n1 1\n255\n\x0a\x14\x1e")).unwrap();
        assert_eq!((rgb.channels, rgb.data.iter().map(|&v| to_u8(v)).collect::<Vec<_>>()), (3, vec![10, 20, 30]));
        // A truncated file is an error naming it, not a panic.
        let short = file("short.pgm", b"P5\n4 4\n255\n\x00\x01");
        let err = load(&short).unwrap_err().to_string();
        assert!(err.starts_with(&short.display().to_string()), "{err}");
    }
}
