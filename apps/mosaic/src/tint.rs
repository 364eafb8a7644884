//! `--tint A`: each placed tile's colours moved towards its cell's, so the mosaic reads as
//! the target from afar. Per channel, the tile's mean and deviation are transferred to the
//! cell's (Reinhard et al.'s colour transfer, in RGB): v' = mu_cell + g (v - mu_tile) with
//! g = sigma_cell / sigma_tile, and the output blends v and v' by A:
//! (1 - A) v + A v' = ((1 - A) + A g) v + A (mu_cell - g mu_tile), one [`Tint`] per cell.
//! A = 0 is the identity (the thumbnail as it is).

use crate::render::Tint;

/// The largest deviation gain: a nearly flat tile is not stretched into noise.
pub const MAX_GAIN: f32 = 4.0;
/// The smallest deviation a gain divides by (one 8-bit level).
const MIN_DEVIATION: f32 = 1.0 / 255.0;

/// Per-channel mean and standard deviation of a set of RGB values in 0..1.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ColourStats {
    pub mean: [f32; 3],
    pub deviation: [f32; 3],
}

/// Accumulates RGB samples in f64.
#[derive(Default)]
struct Moments {
    count: f64,
    sum: [f64; 3],
    squares: [f64; 3],
}

impl Moments {
    fn add(&mut self, rgb: [f64; 3]) {
        self.count += 1.0;
        for ((sum, square), v) in self.sum.iter_mut().zip(&mut self.squares).zip(rgb) {
            *sum += v;
            *square += v * v;
        }
    }

    fn stats(&self) -> ColourStats {
        let n = self.count.max(1.0);
        let mean = self.sum.map(|s| s / n);
        let deviation = std::array::from_fn(|c| (self.squares[c] / n - mean[c] * mean[c]).max(0.0).sqrt() as f32);
        ColourStats { mean: mean.map(|m| m as f32), deviation }
    }
}

/// Statistics of an RGB8 thumbnail.
pub fn of_rgb8(rgb: &[u8]) -> ColourStats {
    let mut m = Moments::default();
    for p in rgb.chunks_exact(3) {
        m.add([p[0], p[1], p[2]].map(|v| v as f64 / 255.0));
    }
    m.stats()
}

/// Statistics of the rectangle (x0, y0, w, h) of an interleaved RGB f32 image `width` pixels
/// wide.
pub fn of_region(rgb: &[f32], width: usize, rect: (usize, usize, usize, usize)) -> ColourStats {
    let (x0, y0, w, h) = rect;
    let mut m = Moments::default();
    for y in y0..y0 + h {
        for x in x0..x0 + w {
            let p = (y * width + x) * 3;
            m.add([rgb[p] as f64, rgb[p + 1] as f64, rgb[p + 2] as f64]);
        }
    }
    m.stats()
}

/// The colour map of a cell whose tile has statistics `tile` and whose target patch has
/// `cell`, at strength `amount` in 0..1.
pub fn transfer(tile: &ColourStats, cell: &ColourStats, amount: f32) -> Tint {
    if amount == 0.0 {
        return Tint::IDENTITY;
    }
    let mut tint = Tint::IDENTITY;
    for c in 0..3 {
        let g = (cell.deviation[c] / tile.deviation[c].max(MIN_DEVIATION)).min(MAX_GAIN);
        tint.gain[c] = (1.0 - amount) + amount * g;
        tint.offset[c] = amount * (cell.mean[c] - g * tile.mean[c]);
    }
    tint
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_transfer_gives_the_cell_its_mean_and_deviation() {
        // A tile of two grays, 0.2 and 0.4 (mean 0.3, deviation 0.1) and a cell of mean 0.7,
        // deviation 0.05.
        let tile: Vec<u8> = [51u8, 51, 51, 102, 102, 102].to_vec();
        let ts = of_rgb8(&tile);
        assert!((ts.mean[0] - 0.3).abs() < 1e-6 && (ts.deviation[1] - 0.1).abs() < 1e-6, "{ts:?}");
        let cell = ColourStats { mean: [0.7; 3], deviation: [0.05; 3] };
        let t = transfer(&ts, &cell, 1.0);
        let mapped: Vec<f32> = [0.2f32, 0.4].iter().map(|&v| t.gain[0] * v + t.offset[0]).collect();
        assert!((mapped[0] - 0.65).abs() < 1e-5 && (mapped[1] - 0.75).abs() < 1e-5, "{mapped:?}");
        // Half way: the average of the tile and the transferred tile.
        let h = transfer(&ts, &cell, 0.5);
        assert!((h.gain[0] * 0.2 + h.offset[0] - (0.2 + 0.65) / 2.0).abs() < 1e-5);
        assert_eq!(transfer(&ts, &cell, 0.0), Tint::IDENTITY);
        // A flat tile takes the cell's mean without a runaway gain.
        let flat = of_rgb8(&[10, 10, 10, 10, 10, 10]);
        let f = transfer(&flat, &ColourStats { mean: [0.5; 3], deviation: [0.3; 3] }, 1.0);
        assert!(f.gain[0] <= MAX_GAIN && (f.gain[0] * flat.mean[0] + f.offset[0] - 0.5).abs() < 1e-5);
        let region = of_region(&[0.2, 0.2, 0.2, 0.4, 0.4, 0.4, 9.0, 9.0, 9.0], 3, (0, 0, 2, 1));
        assert!((region.mean[2] - 0.3).abs() < 1e-6 && (region.deviation[0] - 0.1).abs() < 1e-6);
    }
}
