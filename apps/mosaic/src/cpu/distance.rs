//! The distance stage on the CPU (Eq. 1 in f64): the twin of [`crate::gpu::distance`].

use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::features::Features;

/// Eq. 1 for every (patch, tile) pair in f64.
pub fn distance_cpu(patches: &Features, tiles: &Features) -> Vec<f64> {
    distance_cpu_with(patches, tiles, &ProgressBar::hidden())
}

/// [`distance_cpu`] with `progress` advanced once per patch (row of D).
pub fn distance_cpu_with(patches: &Features, tiles: &Features, progress: &ProgressBar) -> Vec<f64> {
    assert_eq!(patches.width(), tiles.width(), "feature widths differ");
    let n = tiles.len();
    (0..patches.len())
        .into_par_iter()
        .flat_map_iter(|i| {
            let p = patches.get(i);
            progress.inc(1);
            (0..n).map(move |j| {
                p.iter().zip(tiles.get(j)).map(|(&a, &b)| (a as f64 - b as f64).powi(2)).sum::<f64>().sqrt()
            })
        })
        .collect()
}
