//! Pre-clustering (after Miandji et al., TOG 2019, who pre-cluster the training patches so
//! each dictionary starts from, and trains on, patches alike): k-means with K centres on a
//! small feature of every patch, whose clusters replace the random split as the initial
//! shares. Random shares all have the same statistics, so their HOSVD dictionaries start
//! nearly alike; clusters start them apart.
//!
//! The feature: the patch's coefficients in the global HOSVD basis (one Gram per mode over
//! all patches, through the training [`Stages`]) on the two leading basis vectors of every
//! mode (32 numbers), divided by the patch norm so that clusters follow structure, not
//! brightness, as the dictionaries do.

use rand::seq::index::sample;
use rand::SeedableRng;
use rayon::prelude::*;

use super::{set_matrix, Clusters, Stages, TrainOptions};
use crate::dictionary::{mode_products, Ensemble};
use crate::error::Result;
use crate::linalg::svd;
use crate::patch::MODES;

/// Leading basis vectors per mode in the feature.
const LEADING: usize = 2;
/// Lloyd iterations of k-means.
const ROUNDS: usize = 10;

/// The cluster of every patch.
pub fn precluster(stages: &mut dyn Stages, patches: &[f32], opts: &TrainOptions) -> Result<Vec<u32>> {
    let shape = opts.shape;
    let plen = shape.len();
    let n = patches.len() / plen;
    stages.load(&Clusters::from_membership(&vec![0; n], 1), None)?;
    let mut global = Ensemble::random(shape, 1, opts.seed);
    let mut leading: Vec<Vec<usize>> = Vec::with_capacity(MODES);
    for mode in 0..MODES {
        let d = svd(&stages.grams(mode)?[0]);
        set_matrix(&mut global, 0, mode, &d.u);
        let mut order: Vec<usize> = (0..d.s.len()).collect();
        order.sort_by(|&a, &b| d.s[b].total_cmp(&d.s[a]));
        order.truncate(LEADING);
        leading.push(order);
    }
    // Element offsets of the feature's coefficients in the patch's linear storage.
    let strides = shape.strides();
    let mut places = vec![0usize];
    for (mode, lead) in leading.iter().enumerate() {
        places = places.iter().flat_map(|&p| lead.iter().map(move |&j| p + j * strides[mode])).collect();
    }
    let dims = places.len();
    let features: Vec<f32> = patches
        .par_chunks(plen)
        .flat_map_iter(|p| {
            let norm = p.iter().map(|&x| x * x).sum::<f32>().sqrt().max(1e-12);
            let mut x = p.to_vec();
            mode_products(&mut x, shape, global.dictionary(0), true);
            places.iter().map(move |&j| x[j] / norm).collect::<Vec<_>>()
        })
        .collect();
    Ok(kmeans(&features, dims, opts.k, opts.seed))
}

/// Lloyd's k-means from `k` distinct random points (fewer points than centres leaves the
/// extra clusters empty); an emptied cluster keeps its centre.
fn kmeans(points: &[f32], dims: usize, k: usize, seed: u64) -> Vec<u32> {
    let n = points.len() / dims.max(1);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0xc1u64);
    let mut centres: Vec<f32> =
        sample(&mut rng, n, k.min(n)).iter().flat_map(|i| points[i * dims..(i + 1) * dims].to_vec()).collect();
    let nearest = |p: &[f32], centres: &[f32]| {
        centres
            .chunks(dims)
            .map(|c| c.iter().zip(p).map(|(a, b)| (a - b) * (a - b)).sum::<f32>())
            .enumerate()
            .fold((0, f32::INFINITY), |best, (j, d)| if d < best.1 { (j, d) } else { best })
            .0 as u32
    };
    let mut membership = vec![0u32; n];
    for _ in 0..ROUNDS {
        membership = points.par_chunks(dims).map(|p| nearest(p, &centres)).collect();
        let mut sums = vec![0f64; centres.len()];
        let mut counts = vec![0usize; centres.len() / dims.max(1)];
        for (p, &m) in points.chunks(dims).zip(&membership) {
            counts[m as usize] += 1;
            sums[m as usize * dims..(m as usize + 1) * dims].iter_mut().zip(p).for_each(|(s, &x)| *s += x as f64);
        }
        for (j, &count) in counts.iter().enumerate().filter(|(_, &c)| c > 0) {
            for d in 0..dims {
                centres[j * dims + d] = (sums[j * dims + d] / count as f64) as f32;
            }
        }
    }
    membership
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kmeans_separates_two_blobs() {
        let mut points = Vec::new();
        for i in 0..40 {
            let off = if i % 2 == 0 { 0.0 } else { 10.0 };
            points.extend([off + (i as f32 * 0.01), off - (i as f32 * 0.02)]);
        }
        let m = kmeans(&points, 2, 2, 3);
        assert!(m.iter().step_by(2).all(|&x| x == m[0]));
        assert!(m.iter().skip(1).step_by(2).all(|&x| x == m[1]));
        assert_ne!(m[0], m[1]);
    }
}
