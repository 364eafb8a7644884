//! Inputs as joint samples (coordinates + colour), and deterministic generated inputs: a
//! sample image with edges and gradients, and a light field of it seen with parallax.

use std::io::Read;
use std::path::Path;

use kit::image::ImageF32;
use kit::npy::NpyDtype;

use crate::model::{packed_index, packed_len, Model, MAX_EXTENT};

/// Errors reading inputs.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The file itself, or a decoding error; names its path.
    #[error(transparent)]
    Input(#[from] kit::KitError),
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// The magic of a `.npy` file: inputs are told apart by content, not by extension.
const NPY_MAGIC: &[u8; 6] = b"\x93NUMPY";

/// A regular grid of colour samples: an image (p = 2, extent [W, H]) or a light field
/// (p = 4, extent [W, H, U, V]); colours RGB in [0, 1], stored (V, U, H, W, 3)
/// with W fastest.
#[derive(Clone, Debug)]
pub struct Grid {
    pub extent: Vec<usize>,
    pub rgb: Vec<f32>,
}

impl Grid {
    pub fn coord_dims(&self) -> usize {
        self.extent.len()
    }

    pub fn width(&self) -> usize {
        self.extent[0]
    }

    pub fn height(&self) -> usize {
        self.extent[1]
    }

    /// Number of views (1 for images).
    pub fn views(&self) -> usize {
        self.extent[2..].iter().product()
    }

    pub fn len(&self) -> usize {
        self.rgb.len() / 3
    }

    pub fn is_empty(&self) -> bool {
        self.rgb.is_empty()
    }

    /// Image of view (a, b) as RGB f32 (the whole grid for images).
    pub fn view(&self, a: usize, b: usize) -> &[f32] {
        let n = self.width() * self.height() * 3;
        let u = if self.coord_dims() == 4 { self.extent[2] } else { 1 };
        let i = b * u + a;
        &self.rgb[i * n..(i + 1) * n]
    }

    /// Joint samples (x, y, [u, v], r, g, b) with normalised coordinates, row-major, f32.
    pub fn samples(&self) -> Vec<f32> {
        let p = self.coord_dims();
        let (w, h) = (self.width(), self.height());
        let (nu, nv) = if p == 4 { (self.extent[2], self.extent[3]) } else { (1, 1) };
        let mut out = Vec::with_capacity(self.len() * (p + 3));
        for b in 0..nv {
            for a in 0..nu {
                for r in 0..h {
                    for c in 0..w {
                        out.push((c as f32 + 0.5) / w as f32);
                        out.push((r as f32 + 0.5) / h as f32);
                        if p == 4 {
                            out.push((a as f32 + 0.5) / nu as f32);
                            out.push((b as f32 + 0.5) / nv as f32);
                        }
                        let i = (((b * nu + a) * h + r) * w + c) * 3;
                        out.extend_from_slice(&self.rgb[i..i + 3]);
                    }
                }
            }
        }
        out
    }

    /// An image grid from a decoded image (gray is replicated to RGB).
    pub fn from_image(img: &ImageF32) -> Grid {
        let rgb = if img.channels == 3 { img.data.clone() } else { img.data.iter().flat_map(|&g| [g; 3]).collect() };
        Grid { extent: vec![img.width, img.height], rgb }
    }

    /// Loads an image (PNG, JPEG, TIFF, WebP, BMP; by content, EXIF orientation applied) or
    /// a light field `.npy` of shape (U, V, H, W, 3): float32/float64 in [0, 1], or uint8
    /// (divided by 255) or uint16 (divided by 65535). Every axis must be within the model
    /// extent limit (1..=16384), every value finite and in [0, 1], and the samples within
    /// the memory budget.
    pub fn load(path: &Path) -> Result<Grid, DataError> {
        Grid::load_noting_alpha(path).map(|(grid, _)| grid)
    }

    /// [`Grid::load`], and for an image with alpha the number of pixels that are not fully
    /// opaque: the fit models every pixel's stored colour, alpha ignored, and a caller says so.
    pub fn load_noting_alpha(path: &Path) -> Result<(Grid, Option<usize>), DataError> {
        let (grid, translucent) = if is_npy(path)? {
            (load_lightfield(path)?, None)
        } else {
            let (img, translucent) = kit::image::load_with_alpha(path)?;
            (Grid::from_image(&img), translucent)
        };
        if let Some(&e) = grid.extent.iter().find(|&&e| e as u64 > MAX_EXTENT) {
            return Err(DataError::Invalid {
                path: path.display().to_string(),
                message: format!("a side of {e} samples; a model's extent is at most {MAX_EXTENT} per axis"),
            });
        }
        Ok((grid, translucent))
    }
}

/// Whether `path` (a regular file) starts with the `.npy` magic.
fn is_npy(path: &Path) -> Result<bool, kit::KitError> {
    let (file, _) = kit::input::open_regular(path)?;
    let mut head = Vec::with_capacity(NPY_MAGIC.len());
    file.take(NPY_MAGIC.len() as u64).read_to_end(&mut head).map_err(|e| kit::KitError::file(path, e))?;
    Ok(head == NPY_MAGIC)
}

/// A light field `.npy` (U, V, H, W, 3), reordered to the grid's (V, U, H, W, 3).
fn load_lightfield(path: &Path) -> Result<Grid, DataError> {
    let invalid = |message: String| DataError::Invalid { path: path.display().to_string(), message };
    let header = kit::npy::header(path)?;
    let shape = &header.shape;
    if shape.len() != 5 || shape[4] != 3 {
        return Err(invalid(format!("a light field has shape (U, V, H, W, 3), this one {shape:?}")));
    }
    if shape.contains(&0) {
        return Err(invalid(format!("shape {shape:?} holds no samples")));
    }
    let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    // The reader's f32 array and the reordered copy.
    kit::budget::elements(&dims, 8, &format!("the light field {}", path.display()))?;
    let a = kit::npy::read(path)?;
    let scale = match a.dtype {
        NpyDtype::U8 => 1.0 / 255.0,
        NpyDtype::U16 => 1.0 / 65535.0,
        NpyDtype::F32 | NpyDtype::F64 => 1.0,
    };
    if let Some(i) = a.data.iter().position(|v| !(0.0..=1.0).contains(&(v * scale))) {
        return Err(invalid(format!("element {i} is {}; light-field values must be in [0, 1]", a.data[i])));
    }
    let (nu, nv, h, w) = (shape[0], shape[1], shape[2], shape[3]);
    let mut rgb = vec![0.0; a.data.len()];
    let view = h * w * 3;
    for u in 0..nu {
        for v in 0..nv {
            let src = &a.data[(u * nv + v) * view..(u * nv + v + 1) * view];
            rgb[(v * nu + u) * view..(v * nu + u + 1) * view].iter_mut().zip(src).for_each(|(d, s)| *d = s * scale);
        }
    }
    Ok(Grid { extent: vec![w, h, nu, nv], rgb })
}

/// Colour of the generated scene at normalised (x, y): a diagonal gradient, a soft-edged
/// disc, a hard-edged bar and a ring of stripes.
fn scene(x: f64, y: f64) -> [f64; 3] {
    let mut c = [0.15 + 0.6 * x, 0.2 + 0.5 * y, 0.7 - 0.4 * x * y];
    let (dx, dy) = (x - 0.35, y - 0.4);
    let r = (dx * dx + dy * dy).sqrt();
    if r < 0.22 {
        let t = (0.22 - r) / 0.22;
        c = [0.9 * t + c[0] * (1.0 - t), 0.3 + 0.2 * t, 0.2];
    }
    if (0.6..0.85).contains(&x) && (0.15..0.8).contains(&y) {
        c = [0.1, 0.55 + 0.3 * (y - 0.15), 0.25];
    }
    let (ex, ey) = (x - 0.7, y - 0.8);
    let rr = (ex * ex + ey * ey).sqrt();
    if rr < 0.16 && ((rr * 40.0) as i64) % 2 == 0 {
        c = [0.95, 0.95, 0.85];
    }
    c
}

/// The generated sample image, `w x h`, deterministic, with edges and gradients.
pub fn sample_image(w: usize, h: usize) -> Grid {
    sample_lightfield(w, h, 1, 1, 0.0)
}

/// The generated scene seen from a `u x v` grid of views, shifted by `disparity` pixels
/// per view step (a plane in front of the camera plane). `u = v = 1` gives an image.
pub fn sample_lightfield(w: usize, h: usize, u: usize, v: usize, disparity: f64) -> Grid {
    let mut rgb = Vec::with_capacity(w * h * u * v * 3);
    for b in 0..v {
        for a in 0..u {
            let sx = (a as f64 - (u as f64 - 1.0) / 2.0) * disparity;
            let sy = (b as f64 - (v as f64 - 1.0) / 2.0) * disparity;
            for r in 0..h {
                for c in 0..w {
                    let x = (c as f64 + 0.5 + sx) / w as f64;
                    let y = (r as f64 + 0.5 + sy) / h as f64;
                    rgb.extend(scene(x, y).iter().map(|&v| v as f32));
                }
            }
        }
    }
    let extent = if u * v == 1 { vec![w, h] } else { vec![w, h, u, v] };
    Grid { extent, rgb }
}

/// PSNR in dB between two RGB buffers of values in [0, 1] (the rendering clamped).
pub fn psnr(got: &[f32], want: &[f32]) -> f64 {
    let mse: f64 = got
        .iter()
        .zip(want)
        .map(|(&g, &w)| {
            let e = g.clamp(0.0, 1.0) as f64 - w as f64;
            e * e
        })
        .sum::<f64>()
        / got.len().max(1) as f64;
    10.0 * (1.0 / mse.max(1e-20)).log10()
}

/// Tiles `tile` (a model of a `tile_px x tile_px` image) over a `width x height` frame,
/// keeps the kernels whose centre falls inside, and drops evenly spaced kernels until
/// exactly `k` remain (the paper repeats its Car model the same way to reach its K).
pub fn tile_model(tile: &Model, tile_px: usize, width: usize, height: usize, k: usize) -> Model {
    let d = tile.dims();
    let tri = packed_len(d);
    let (sx, sy) = (tile_px as f64 / width as f64, tile_px as f64 / height as f64);
    let mut out =
        Model { pi: Vec::new(), mu: Vec::new(), cov: Vec::new(), extent: vec![width, height], ..tile.clone() };
    for ty in 0..height.div_ceil(tile_px) {
        for tx in 0..width.div_ceil(tile_px) {
            for j in 0..tile.len() {
                let mu = tile.mean(j);
                let (x, y) = ((tx as f64 + mu[0]) * sx, (ty as f64 + mu[1]) * sy);
                if !(0.0..1.0).contains(&x) || !(0.0..1.0).contains(&y) {
                    continue;
                }
                out.pi.push(tile.pi[j]);
                out.mu.extend([x, y]);
                out.mu.extend_from_slice(&mu[2..]);
                let c = tile.covariance(j);
                let scale = |i: usize| match i {
                    0 => sx,
                    1 => sy,
                    _ => 1.0,
                };
                for a in 0..d {
                    for b in 0..=a {
                        out.cov.push(c[packed_index(a, b)] * scale(a) * scale(b));
                    }
                }
            }
        }
    }
    let have = out.len();
    assert!(have >= k, "tiling gives {have} kernels, fewer than {k}");
    let drop = have - k;
    let keep: Vec<usize> = (0..have).filter(|&i| drop == 0 || (i * drop) % have >= drop).collect();
    let keep: Vec<usize> = keep.into_iter().take(k).collect();
    let total: f64 = keep.iter().map(|&i| out.pi[i]).sum();
    Model {
        pi: keep.iter().map(|&i| out.pi[i] / total).collect(),
        mu: keep.iter().flat_map(|&i| out.mu[i * d..(i + 1) * d].to_vec()).collect(),
        cov: keep.iter().flat_map(|&i| out.cov[i * tri..(i + 1) * tri].to_vec()).collect(),
        ..out
    }
}

/// PSNR in dB from a sum of squared errors over `values` values.
pub fn psnr_of_sse(sse: f64, values: usize) -> f64 {
    10.0 * (values as f64 / sse.max(1e-30)).log10()
}
