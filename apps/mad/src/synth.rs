//! Deterministic natural-looking test images and the four distortion kinds of the
//! acceptance tests (JPEG, blur, noise, contrast), for the demo, the benchmark and tests.
//! A scene is multi-octave value noise (a 1/f-like texture) with a few flat shapes, a
//! grating and a dark corner, so every branch of the visibility mask is exercised.

use kit::rng::Rng;

use crate::input::GrayImage;

/// Value noise with smooth (cubic) interpolation on a lattice of `cell` pixels.
fn value_noise(width: usize, height: usize, cell: f64, rng: &mut Rng) -> Vec<f64> {
    let gw = (width as f64 / cell).ceil() as usize + 2;
    let gh = (height as f64 / cell).ceil() as usize + 2;
    let lattice: Vec<f64> = (0..gw * gh).map(|_| rng.uniform() * 2.0 - 1.0).collect();
    let smooth = |t: f64| t * t * (3.0 - 2.0 * t);
    (0..width * height)
        .map(|i| {
            let (x, y) = ((i % width) as f64 / cell, (i / width) as f64 / cell);
            let (ix, iy) = (x as usize, y as usize);
            let (fx, fy) = (smooth(x - ix as f64), smooth(y - iy as f64));
            let at = |dx: usize, dy: usize| lattice[(iy + dy) * gw + ix + dx];
            let top = at(0, 0) * (1.0 - fx) + at(1, 0) * fx;
            let bottom = at(0, 1) * (1.0 - fx) + at(1, 1) * fx;
            top * (1.0 - fy) + bottom * fy
        })
        .collect()
}

/// A `width x height` 8-bit scene from `seed`.
pub fn scene(width: usize, height: usize, seed: u64) -> GrayImage {
    let mut rng = Rng::new(seed);
    let mut v = vec![128.0; width * height];
    let mut cell = 96.0;
    let mut amplitude = 60.0;
    while cell >= 1.5 {
        for (p, n) in v.iter_mut().zip(value_noise(width, height, cell, &mut rng)) {
            *p += amplitude * n;
        }
        cell /= 2.0;
        amplitude *= 0.6;
    }
    let (w, h) = (width as f64, height as f64);
    for _ in 0..6 {
        let (cx, cy, r) = (rng.uniform() * w, rng.uniform() * h, (0.05 + 0.15 * rng.uniform()) * w.min(h));
        let level = rng.uniform() * 255.0;
        let square = rng.uniform() < 0.5;
        for (i, p) in v.iter_mut().enumerate() {
            let (dx, dy) = ((i % width) as f64 - cx, (i / width) as f64 - cy);
            let inside = if square { dx.abs().max(dy.abs()) < r } else { dx.hypot(dy) < r };
            if inside {
                *p = 0.35 * *p + 0.65 * level;
            }
        }
    }
    for (i, p) in v.iter_mut().enumerate() {
        let (x, y) = ((i % width) as f64, (i / width) as f64);
        // A grating in the lower-right quarter and a dark upper-left corner.
        if x > 0.6 * w && y > 0.6 * h {
            *p += 40.0 * (x * 0.7 + y * 0.3).sin();
        }
        if x < 0.2 * w && y < 0.2 * h {
            *p *= 0.15;
        }
    }
    GrayImage { width, height, values: v.into_iter().map(|p| p.round().clamp(0.0, 255.0)).collect(), eight_bit: true }
}

/// One distortion and its strength.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "kind", content = "level", rename_all = "lowercase")]
pub enum Distortion {
    /// Additive white Gaussian noise of this standard deviation (gray levels).
    Noise(f64),
    /// Gaussian blur of this standard deviation (pixels).
    Blur(f64),
    /// Contrast scaled by this factor about the mean.
    Contrast(f64),
    /// JPEG at this quality (1..100).
    Jpeg(u8),
}

impl Distortion {
    /// A short file-name-friendly label.
    pub fn label(&self) -> String {
        match self {
            Distortion::Noise(s) => format!("noise{s}"),
            Distortion::Blur(s) => format!("blur{s}"),
            Distortion::Contrast(c) => format!("contrast{c}"),
            Distortion::Jpeg(q) => format!("jpeg{q}"),
        }
    }
}

fn quantise(values: Vec<f64>) -> Vec<f64> {
    values.into_iter().map(|p| p.round().clamp(0.0, 255.0)).collect()
}

fn blur(img: &GrayImage, sigma: f64) -> Vec<f64> {
    let radius = (3.0 * sigma).ceil() as isize;
    let kernel: Vec<f64> = (-radius..=radius).map(|d| (-(d * d) as f64 / (2.0 * sigma * sigma)).exp()).collect();
    let total: f64 = kernel.iter().sum();
    let (w, h) = (img.width as isize, img.height as isize);
    let clamp = |i: isize, n: isize| i.clamp(0, n - 1) as usize;
    let pass = |src: &[f64], horizontal: bool| -> Vec<f64> {
        (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                kernel
                    .iter()
                    .zip(-radius..=radius)
                    .map(|(k, d)| {
                        let j = if horizontal {
                            y as usize * w as usize + clamp(x + d, w)
                        } else {
                            clamp(y + d, h) * w as usize + x as usize
                        };
                        k * src[j]
                    })
                    .sum::<f64>()
                    / total
            })
            .collect()
    };
    pass(&pass(&img.values, true), false)
}

fn jpeg(img: &GrayImage, quality: u8) -> Vec<f64> {
    let pixels: Vec<u8> = img.values.iter().map(|&v| v.round().clamp(0.0, 255.0) as u8).collect();
    let mut bytes = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, quality)
        .encode(&pixels, img.width as u32, img.height as u32, image::ExtendedColorType::L8)
        .expect("JPEG encoding of an in-memory gray image");
    let decoded = image::load_from_memory_with_format(&bytes, image::ImageFormat::Jpeg)
        .expect("decoding the JPEG we just encoded")
        .to_luma8();
    decoded.into_raw().into_iter().map(f64::from).collect()
}

/// `img` with `distortion` applied (8-bit result), deterministic for a given `seed`.
pub fn distort(img: &GrayImage, distortion: Distortion, seed: u64) -> GrayImage {
    let values = match distortion {
        Distortion::Noise(sigma) => {
            let mut rng = Rng::new(seed);
            quantise(img.values.iter().map(|&v| v + sigma * rng.normal()).collect())
        }
        Distortion::Blur(sigma) => quantise(blur(img, sigma)),
        Distortion::Contrast(c) => {
            let mean = img.values.iter().sum::<f64>() / img.values.len() as f64;
            quantise(img.values.iter().map(|&v| mean + c * (v - mean)).collect())
        }
        Distortion::Jpeg(q) => jpeg(img, q),
    };
    GrayImage { width: img.width, height: img.height, values, eight_bit: true }
}

/// The 8-bit pixels of an 8-bit gray image (for writing PNGs).
pub fn to_u8(img: &GrayImage) -> Vec<u8> {
    img.values.iter().map(|&v| v.round().clamp(0.0, 255.0) as u8).collect()
}
