//! The distance stage on the CPU in f64: the twin of [`crate::gpu::distance`] (Eq. 1, or
//! CIEDE2000 per cell).

use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::colour::{ciede2000, Formula};
use crate::features::Features;

/// Eq. 1 for every (patch, tile) pair in f64.
pub fn distance_cpu(patches: &Features, tiles: &Features) -> Vec<f64> {
    distance_cpu_with(patches, tiles, Formula::Euclidean, &ProgressBar::hidden())
}

/// The distance of two feature vectors: Euclidean over every value, or the square root of
/// the sum over (L, a, b) cells of their CIEDE2000 difference squared.
fn distance(p: &[f32], t: &[f32], formula: Formula) -> f64 {
    let lab = |c: &[f32]| [c[0] as f64, c[1] as f64, c[2] as f64];
    match formula {
        Formula::Euclidean => p.iter().zip(t).map(|(&a, &b)| (a as f64 - b as f64).powi(2)).sum::<f64>().sqrt(),
        Formula::Ciede2000 => {
            p.chunks_exact(3).zip(t.chunks_exact(3)).map(|(a, b)| ciede2000(lab(a), lab(b)).powi(2)).sum::<f64>().sqrt()
        }
    }
}

/// Every (patch, tile) distance by `formula`, with `progress` advanced once per patch (row
/// of D).
pub fn distance_cpu_with(patches: &Features, tiles: &Features, formula: Formula, progress: &ProgressBar) -> Vec<f64> {
    assert_eq!(patches.width(), tiles.width(), "feature widths differ");
    let n = tiles.len();
    (0..patches.len())
        .into_par_iter()
        .flat_map_iter(|i| {
            let p = patches.get(i);
            progress.inc(1);
            (0..n).map(move |j| distance(p, tiles.get(j), formula))
        })
        .collect()
}
