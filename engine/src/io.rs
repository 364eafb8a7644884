//! File input and output shared by every app: images in, PNG and `.npy` out, and the two
//! rules for outputs: a file is written to a temporary file beside it and renamed into place
//! (so a failure never leaves a half-written output), and an output path that names one of
//! the run's inputs is refused (nothing the user gave us is overwritten).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use ndarray::{ArrayD, IxDyn};
use ndarray_npy::{ReadNpyExt, WriteNpyExt};

use crate::error::{EngineError, Result};

/// Refuses `output` if it is the same file as any of `inputs`.
pub fn check_not_input(output: &Path, inputs: &[&Path]) -> Result<()> {
    let out = output.canonicalize().ok();
    for input in inputs {
        let same = match (&out, input.canonicalize().ok()) {
            (Some(o), Some(i)) => *o == i,
            _ => output == *input,
        };
        if same {
            return Err(EngineError::file(output, "output path is one of the inputs; refusing to overwrite it"));
        }
    }
    Ok(())
}

/// Writes `path` through `write`, into a temporary file in the same folder that is renamed
/// over `path` only once `write` succeeded.
pub fn write_atomic(path: &Path, write: impl FnOnce(&mut BufWriter<File>) -> Result<()>) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(EngineError::file(path, format!("folder {} does not exist", dir.display())));
    }
    let tmp = tempfile::Builder::new()
        .prefix(".tessera-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| EngineError::file(path, e))?;
    let (file, tmp_path) = tmp.into_parts();
    let mut writer = BufWriter::new(file);
    write(&mut writer)?;
    writer.flush().map_err(|e| EngineError::file(path, e))?;
    drop(writer);
    tmp_path.persist(path).map_err(|e| EngineError::file(path, e.error))?;
    Ok(())
}

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

/// Loads PNG, JPEG, TIFF, BMP or WebP (8- or 16-bit, gray or colour) as [`ImageF32`].
pub fn load_image(path: &Path) -> Result<ImageF32> {
    let reader = image::ImageReader::open(path)
        .map_err(|e| EngineError::file(path, e))?
        .with_guessed_format()
        .map_err(|e| EngineError::file(path, e))?;
    let img = reader.decode().map_err(|e| EngineError::file(path, format!("cannot decode image: {e}")))?;
    let (width, height) = (img.width() as usize, img.height() as usize);
    if width == 0 || height == 0 {
        return Err(EngineError::file(path, "image is empty"));
    }
    let color = img.color();
    let source_bits = if color.bytes_per_pixel() / color.channel_count() >= 2 { 16 } else { 8 };
    let (channels, data) = if color.has_color() {
        (3, img.to_rgb32f().into_raw())
    } else {
        let l = img.to_luma16();
        (1, l.into_raw().into_iter().map(|v| v as f32 / 65535.0).collect())
    };
    Ok(ImageF32 { width, height, channels, data, source_bits })
}

/// Loads an image as 8-bit RGBA (for the compositor's colour planes).
pub fn load_rgba8(path: &Path) -> Result<(usize, usize, Vec<u8>)> {
    let img = image::open(path).map_err(|e| EngineError::file(path, format!("cannot read image: {e}")))?;
    let rgba = img.to_rgba8();
    Ok((rgba.width() as usize, rgba.height() as usize, rgba.into_raw()))
}

fn save_png(path: &Path, width: usize, height: usize, data: &[u8], color: image::ExtendedColorType) -> Result<()> {
    let expected = width * height * color.channel_count() as usize;
    if data.len() != expected {
        return Err(EngineError::InvalidInput(format!(
            "PNG {}: {} bytes for a {width}x{height} image that needs {expected}",
            path.display(),
            data.len()
        )));
    }
    write_atomic(path, |w| {
        use image::ImageEncoder;
        image::codecs::png::PngEncoder::new(w)
            .write_image(data, width as u32, height as u32, color)
            .map_err(|e| EngineError::file(path, e))
    })
}

/// Writes `bytes` to `path` atomically (see [`write_atomic`]).
pub fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic(path, |w| w.write_all(bytes).map_err(|e| EngineError::file(path, e)))
}

/// Writes an 8-bit RGB PNG (3 bytes per pixel, row 0 at the top).
pub fn save_png_rgb8(path: &Path, width: usize, height: usize, rgb: &[u8]) -> Result<()> {
    save_png(path, width, height, rgb, image::ExtendedColorType::Rgb8)
}

/// Writes an 8-bit RGBA PNG.
pub fn save_png_rgba8(path: &Path, width: usize, height: usize, rgba: &[u8]) -> Result<()> {
    save_png(path, width, height, rgba, image::ExtendedColorType::Rgba8)
}

/// Writes an 8-bit gray PNG.
pub fn save_png_gray8(path: &Path, width: usize, height: usize, gray: &[u8]) -> Result<()> {
    save_png(path, width, height, gray, image::ExtendedColorType::L8)
}

/// Converts a value in [0, 1] to 8 bits (clamped, rounded).
pub fn to_u8(v: f32) -> u8 {
    (v.clamp(0.0, 1.0) * 255.0 + 0.5) as u8
}

/// Writes a float32 `.npy` of the given shape (C order).
pub fn write_npy_f32(path: &Path, shape: &[usize], data: &[f32]) -> Result<()> {
    let array = ArrayD::from_shape_vec(IxDyn(shape), data.to_vec())
        .map_err(|e| EngineError::InvalidInput(format!("npy {}: {e}", path.display())))?;
    write_atomic(path, |w| array.write_npy(w).map_err(|e| EngineError::file(path, e)))
}

/// Reads a `.npy` of float32, float64 or uint8 (C order) as (shape, f32 values). uint8 is
/// returned as stored (0..255); the caller decides how to scale it. Returns also whether
/// the file held uint8.
pub fn read_npy(path: &Path) -> Result<NpyArray> {
    let open = || File::open(path).map_err(|e| EngineError::file(path, e));
    if let Ok(a) = ArrayD::<f32>::read_npy(open()?) {
        return Ok(NpyArray::from_array(a.as_standard_layout().into_owned(), NpyDtype::F32));
    }
    if let Ok(a) = ArrayD::<f64>::read_npy(open()?) {
        return Ok(NpyArray::from_array(a.mapv(|v| v as f32).as_standard_layout().into_owned(), NpyDtype::F64));
    }
    match ArrayD::<u8>::read_npy(open()?) {
        Ok(a) => Ok(NpyArray::from_array(a.mapv(|v| v as f32).as_standard_layout().into_owned(), NpyDtype::U8)),
        Err(e) => Err(EngineError::file(path, format!("not a float32, float64 or uint8 .npy array: {e}"))),
    }
}

/// Reads a float64 `.npy` without loss (for inputs whose precision matters, such as
/// distance matrices). float32 and uint8 files are widened.
pub fn read_npy_f64(path: &Path) -> Result<(Vec<usize>, Vec<f64>)> {
    let open = || File::open(path).map_err(|e| EngineError::file(path, e));
    if let Ok(a) = ArrayD::<f64>::read_npy(open()?) {
        let a = a.as_standard_layout().into_owned();
        return Ok((a.shape().to_vec(), a.into_raw_vec_and_offset().0));
    }
    let a = read_npy(path)?;
    Ok((a.shape, a.data.into_iter().map(f64::from).collect()))
}

/// The element type a `.npy` file held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NpyDtype {
    F32,
    F64,
    U8,
}

/// A `.npy` array read as f32 in C order.
#[derive(Clone, Debug)]
pub struct NpyArray {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
    pub dtype: NpyDtype,
}

impl NpyArray {
    fn from_array(a: ArrayD<f32>, dtype: NpyDtype) -> Self {
        let shape = a.shape().to_vec();
        NpyArray { shape, data: a.into_raw_vec_and_offset().0, dtype }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_round_trip_and_atomic_write() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.npy");
        let data: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 3.0).collect();
        write_npy_f32(&p, &[2, 3, 4], &data).unwrap();
        let back = read_npy(&p).unwrap();
        assert_eq!(back.shape, vec![2, 3, 4]);
        assert_eq!(back.data, data);
        assert_eq!(back.dtype, NpyDtype::F32);
        // A failing writer leaves no file behind.
        let q = dir.path().join("b.npy");
        let r = write_atomic(&q, |_| Err(EngineError::InvalidInput("boom".into())));
        assert!(r.is_err());
        assert!(!q.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn refuses_to_overwrite_an_input() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("in.png");
        save_png_gray8(&p, 2, 1, &[0, 255]).unwrap();
        assert!(check_not_input(&p, &[&p]).is_err());
        assert!(check_not_input(&dir.path().join("out.png"), &[&p]).is_ok());
        let img = load_image(&p).unwrap();
        assert_eq!((img.width, img.height, img.channels), (2, 1, 1));
        assert!((img.data[1] - 1.0).abs() < 1e-6);
    }
}
