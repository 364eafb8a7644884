//! Deterministic synthetic data for the demo, the benchmark and tests: smooth colour fields
//! with noise as target images and tiles, their u x v features, and the photomosaic-like
//! distance matrices built from them.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::features::Features;

/// A smooth RGB field on [0, 1]^2: a base colour, a linear gradient and a few Gaussian blobs.
#[derive(Clone, Debug)]
pub struct SmoothField {
    base: [f32; 3],
    gradient: [[f32; 3]; 2],
    blobs: Vec<([f32; 2], f32, [f32; 3])>,
}

impl SmoothField {
    pub fn random(rng: &mut ChaCha8Rng, blobs: usize) -> SmoothField {
        let colour = |rng: &mut ChaCha8Rng, s: f32| [0; 3].map(|_: i32| rng.gen_range(-s..s));
        SmoothField {
            base: [0; 3].map(|_: i32| rng.gen_range(0.1f32..0.9)),
            gradient: [colour(rng, 0.4), colour(rng, 0.4)],
            blobs: (0..blobs)
                .map(|_| ([rng.gen(), rng.gen()], rng.gen_range(0.05f32..0.3), colour(rng, 0.6)))
                .collect(),
        }
    }

    /// The colour at (x, y), clamped to [0, 1].
    pub fn eval(&self, x: f32, y: f32) -> [f32; 3] {
        let mut c = [0.0f32; 3];
        for (k, ck) in c.iter_mut().enumerate() {
            *ck = self.base[k] + self.gradient[0][k] * (x - 0.5) + self.gradient[1][k] * (y - 0.5);
        }
        for (centre, radius, colour) in &self.blobs {
            let r2 = ((x - centre[0]).powi(2) + (y - centre[1]).powi(2)) / (radius * radius);
            let w = (-r2).exp();
            for (k, ck) in c.iter_mut().enumerate() {
                *ck += w * colour[k];
            }
        }
        c.map(|v| v.clamp(0.0, 1.0))
    }

    /// An RGB8 image of the field with uniform noise of amplitude `noise` (in [0, 1] units).
    pub fn render(&self, width: usize, height: usize, noise: f32, rng: &mut ChaCha8Rng) -> Vec<u8> {
        let mut out = Vec::with_capacity(width * height * 3);
        for y in 0..height {
            for x in 0..width {
                let c = self.eval((x as f32 + 0.5) / width as f32, (y as f32 + 0.5) / height as f32);
                for v in c {
                    out.push(kit::image::to_u8(v + rng.gen_range(-noise..=noise)));
                }
            }
        }
        out
    }

    /// Features of the rectangle [x0, x0 + w] x [y0, y0 + h] split into u x v cells, each
    /// cell's mean colour estimated from 2 x 2 samples plus noise, in 0..255 units.
    fn cell_features(
        &self,
        rect: [f32; 4],
        cells: (usize, usize),
        noise: f32,
        rng: &mut ChaCha8Rng,
        out: &mut Vec<f32>,
    ) {
        let [x0, y0, w, h] = rect;
        for b in 0..cells.1 {
            for a in 0..cells.0 {
                let mut sum = [0.0f32; 3];
                for (sx, sy) in [(0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)] {
                    let x = x0 + w * (a as f32 + sx) / cells.0 as f32;
                    let y = y0 + h * (b as f32 + sy) / cells.1 as f32;
                    let c = self.eval(x, y);
                    (0..3).for_each(|k| sum[k] += c[k] / 4.0);
                }
                for s in sum {
                    out.push(255.0 * (s + rng.gen_range(-noise..=noise)).clamp(0.0, 1.0));
                }
            }
        }
    }
}

/// Patch features of a `grid` (cols x rows) over a random target and features of `tiles`
/// random tiles: the inputs of a photomosaic-like distance matrix.
pub fn problem(grid: (usize, usize), tiles: usize, cells: (usize, usize), seed: u64) -> (Features, Features) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let target = SmoothField::random(&mut rng, 8);
    let mut patches = Features::new(cells);
    let (w, h) = (1.0 / grid.0 as f32, 1.0 / grid.1 as f32);
    for r in 0..grid.1 {
        for c in 0..grid.0 {
            target.cell_features([c as f32 * w, r as f32 * h, w, h], cells, 0.03, &mut rng, &mut patches.data);
        }
    }
    let mut tile_features = Features::new(cells);
    for _ in 0..tiles {
        let field = SmoothField::random(&mut rng, 2);
        field.cell_features([0.0, 0.0, 1.0, 1.0], cells, 0.03, &mut rng, &mut tile_features.data);
    }
    (patches, tile_features)
}

/// The grid (cols, rows) closest to square with exactly `m` patches.
pub fn grid_for(m: usize) -> (usize, usize) {
    let mut rows = (m as f64).sqrt() as usize;
    while !m.is_multiple_of(rows) {
        rows -= 1;
    }
    (m / rows, rows)
}
