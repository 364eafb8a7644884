//! Host-side image helpers for tiles and targets: RGB conversion, centre crop to an aspect,
//! box-filtered thumbnails, and [`Pixels`], read access to RGB f32 (the target) or RGBA8
//! (tiles: a third of the memory of f32 RGB, so many large photos decode in parallel).

use kit::image::ImageF32;

/// An interleaved image's pixel p as RGB in 0..1.
pub trait Pixels: Sync {
    fn rgb(&self, p: usize) -> [f32; 3];
}

/// Interleaved RGB f32.
impl Pixels for [f32] {
    fn rgb(&self, p: usize) -> [f32; 3] {
        [self[p * 3], self[p * 3 + 1], self[p * 3 + 2]]
    }
}

/// Interleaved RGBA8 (alpha ignored).
pub struct Rgba8<'a>(pub &'a [u8]);

impl Pixels for Rgba8<'_> {
    fn rgb(&self, p: usize) -> [f32; 3] {
        [self.0[p * 4], self.0[p * 4 + 1], self.0[p * 4 + 2]].map(|v| v as f32 / 255.0)
    }
}

/// The image as interleaved RGB f32 (gray is replicated).
pub fn to_rgb(img: &ImageF32) -> Vec<f32> {
    match img.channels {
        3 => img.data.clone(),
        _ => img.data.iter().flat_map(|&v| [v, v, v]).collect(),
    }
}

/// The largest centred rectangle (x0, y0, w, h) of a `width x height` image with aspect
/// w / h = `aspect`.
pub fn centre_crop(width: usize, height: usize, aspect: f64) -> (usize, usize, usize, usize) {
    if width as f64 / height as f64 > aspect {
        let w = ((height as f64 * aspect).round() as usize).clamp(1, width);
        ((width - w) / 2, 0, w, height)
    } else {
        let h = ((width as f64 / aspect).round() as usize).clamp(1, height);
        (0, (height - h) / 2, width, h)
    }
}

/// Box-filtered RGB8 thumbnail (`tw x th`) of the rectangle `rect` of an image.
pub fn thumbnail(
    rgb: &(impl Pixels + ?Sized),
    width: usize,
    rect: (usize, usize, usize, usize),
    tw: usize,
    th: usize,
) -> Vec<u8> {
    let (x0, y0, w, h) = rect;
    let mut out = Vec::with_capacity(tw * th * 3);
    for ty in 0..th {
        let (ya, yb) = (y0 + ty * h / th, y0 + ((ty + 1) * h / th).max(ty * h / th + 1));
        for tx in 0..tw {
            let (xa, xb) = (x0 + tx * w / tw, x0 + ((tx + 1) * w / tw).max(tx * w / tw + 1));
            let mut sum = [0.0f32; 3];
            for y in ya..yb {
                for x in xa..xb {
                    let v = rgb.rgb(y * width + x);
                    (0..3).for_each(|k| sum[k] += v[k]);
                }
            }
            let count = ((xb - xa) * (yb - ya)) as f32;
            out.extend(sum.map(|s| kit::image::to_u8(s / count)));
        }
    }
    out
}
