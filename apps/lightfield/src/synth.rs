//! Synthetic light fields with real parallax, since public captures cannot be downloaded
//! here: textured planes at several depths in front of a textured background, rendered for
//! every view of a U x V camera grid. A plane at disparity `d` shifts by `d` pixels per view
//! step (horizontally with the view column, vertically with the view row), and nearer
//! planes occlude farther ones, as in a rectified capture such as the Stanford arrays.

use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use crate::error::Result;
use crate::lightfield::LightField;
use crate::lightfield::COLOURS;

/// One textured plane: a rectangle or a disc (the background covers everything).
struct Plane {
    disparity: f32,
    /// Centre and half-size in pixels; `None` for the background.
    region: Option<([f32; 2], [f32; 2], bool)>,
    colours: [[f32; 3]; 2],
    frequency: [f32; 2],
    phase: f32,
    checker: f32,
}

impl Plane {
    fn random(rng: &mut impl Rng, w: f32, h: f32, disparity: f32, background: bool) -> Plane {
        let mut colour = || std::array::from_fn(|_| rng.gen_range(0.05f32..0.95));
        let colours = [colour(), colour()];
        let region = (!background).then(|| {
            let centre = [rng.gen_range(0.2..0.8) * w, rng.gen_range(0.2..0.8) * h];
            let half = [rng.gen_range(0.12..0.3) * w, rng.gen_range(0.12..0.3) * h];
            (centre, half, rng.gen_bool(0.5))
        });
        Plane {
            disparity,
            region,
            colours,
            frequency: [rng.gen_range(0.05..0.4), rng.gen_range(0.05..0.4)],
            phase: rng.gen_range(0.0..std::f32::consts::TAU),
            checker: rng.gen_range(4.0..16.0),
        }
    }

    /// The plane's colour at plane coordinates (x, y), if the plane covers them.
    fn sample(&self, x: f32, y: f32) -> Option<[f32; 3]> {
        if let Some((c, half, disc)) = self.region {
            let (dx, dy) = ((x - c[0]) / half[0], (y - c[1]) / half[1]);
            let inside = if disc { dx * dx + dy * dy <= 1.0 } else { dx.abs() <= 1.0 && dy.abs() <= 1.0 };
            if !inside {
                return None;
            }
        }
        let wave = 0.5 + 0.5 * (self.frequency[0] * x + self.phase).sin() * (self.frequency[1] * y).cos();
        let check = ((x / self.checker).floor() + (y / self.checker).floor()).rem_euclid(2.0);
        let s = 0.65 * wave + 0.35 * check;
        Some(std::array::from_fn(|i| self.colours[0][i] + (self.colours[1][i] - self.colours[0][i]) * s))
    }
}

/// Renders a `views.0 x views.1` light field of `size.0 x size.1` (width x height) pixels
/// from the scene `seed` describes: a background and four planes at increasing depth.
pub fn generate(views: (usize, usize), size: (usize, usize), seed: u64) -> LightField {
    let (w, h) = size;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut planes: Vec<Plane> = vec![Plane::random(&mut rng, w as f32, h as f32, 0.25, true)];
    for i in 0..4 {
        let disparity = 0.6 + 0.55 * i as f32 + rng.gen_range(0.0..0.3);
        planes.push(Plane::random(&mut rng, w as f32, h as f32, disparity, false));
    }
    planes.reverse(); // nearest (largest disparity) first
    paint(views, size, |du, dv, x, y| {
        planes
            .iter()
            .find_map(|p| p.sample(x as f32 + p.disparity * dv, y as f32 + p.disparity * du))
            .unwrap_or([0.0; 3])
    })
    .expect("generated sizes match")
}

/// The light field of `views` (U x V) views of `size` (width x height) pixels whose pixel
/// (x, y) in the view `du` rows and `dv` columns from the grid's centre is
/// `colour(du, dv, x, y)`; the views are painted in parallel.
pub fn paint(
    (u, v): (usize, usize),
    (w, h): (usize, usize),
    colour: impl Fn(f32, f32, usize, usize) -> [f32; COLOURS] + Sync,
) -> Result<LightField> {
    let (uc, vc) = ((u as f32 - 1.0) / 2.0, (v as f32 - 1.0) / 2.0);
    let mut data = vec![0f32; u * v * h * w * COLOURS];
    data.par_chunks_mut((h * w * COLOURS).max(1)).enumerate().for_each(|(view, out)| {
        let (du, dv) = ((view / v) as f32 - uc, (view % v) as f32 - vc);
        for (i, pixel) in out.chunks_exact_mut(COLOURS).enumerate() {
            pixel.copy_from_slice(&colour(du, dv, i % w, i / w));
        }
    });
    LightField::new(u, v, h, w, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_differ_by_parallax_and_values_stay_in_range() {
        let lf = generate((3, 3), (40, 30), 7);
        lf.check_values("synthetic").unwrap();
        assert_ne!(lf.view(0, 0), lf.view(0, 2));
        assert_ne!(lf.view(0, 0), lf.view(2, 0));
        assert_eq!(generate((3, 3), (40, 30), 7), lf);
        assert_ne!(generate((3, 3), (40, 30), 8), lf);
    }
}
