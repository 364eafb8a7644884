//! u x v mean-RGB features (Section 2) of image regions; the distance stage between them is
//! [`crate::cpu::distance`] and [`crate::gpu::distance`].

use crate::image_ops::Pixels;

/// Features of a set of regions: `3 u v` values per region (cells row-major, RGB
/// interleaved), in 0..255 units.
#[derive(Clone, Debug, Default)]
pub struct Features {
    pub cells: (usize, usize),
    pub data: Vec<f32>,
}

impl Features {
    pub fn new(cells: (usize, usize)) -> Features {
        Features { cells, data: Vec::new() }
    }

    /// Values per region.
    pub fn width(&self) -> usize {
        3 * self.cells.0 * self.cells.1
    }

    /// Number of regions.
    pub fn len(&self) -> usize {
        self.data.len() / self.width().max(1)
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn get(&self, k: usize) -> &[f32] {
        let w = self.width();
        &self.data[k * w..(k + 1) * w]
    }
}

/// The range of a feature value: a mean colour in 0..255 units.
pub const FEATURE_MAX: f32 = 255.0;

/// Checks feature values wherever they come from (an image, the tile cache): finite and in
/// [0, 255], so Eq. 1 is the same in f32 on the GPU and in f64 on the CPU and no distance
/// overflows. Returns a message naming the first bad value.
pub fn check(values: &[f32]) -> std::result::Result<(), String> {
    match values.iter().position(|v| !(0.0..=FEATURE_MAX).contains(v)) {
        None => Ok(()),
        Some(k) => Err(format!("feature value {k} is {} (features are mean colours in 0..255)", values[k])),
    }
}

/// Mean colour of each of u x v cells of the rectangle (x0, y0, w, h) of an image
/// (`width` pixels per row), appended to `out` in 0..255 units. Cell borders fall between
/// pixels; pixels are split by their top-left corner.
pub fn region_features(
    data: &(impl Pixels + ?Sized),
    width: usize,
    rect: (usize, usize, usize, usize),
    cells: (usize, usize),
    out: &mut Vec<f32>,
) {
    let (x0, y0, w, h) = rect;
    for b in 0..cells.1 {
        let (ya, yb) = (y0 + b * h / cells.1, y0 + (b + 1) * h / cells.1);
        for a in 0..cells.0 {
            let (xa, xb) = (x0 + a * w / cells.0, x0 + (a + 1) * w / cells.0);
            let mut sum = [0.0f64; 3];
            for y in ya..yb.max(ya + 1) {
                for x in xa..xb.max(xa + 1) {
                    let v = data.rgb(y * width + x);
                    (0..3).for_each(|k| sum[k] += v[k] as f64);
                }
            }
            let count = ((xb.max(xa + 1) - xa) * (yb.max(ya + 1) - ya)) as f64;
            out.extend(sum.map(|s| (255.0 * s / count) as f32));
        }
    }
}
