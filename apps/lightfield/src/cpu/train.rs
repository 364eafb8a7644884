//! The CPU twin of the training stages (f64 sums of f32 products): per cluster, the mode-n
//! Gram matrix of its patches and the cross-product with their coefficients synthesised
//! through every other mode ([`mode_products_except`], the same f32 products the CPU codec
//! uses). [`crate::gpu::train`] runs the same stages on the engine's batched GEMM.

use rayon::prelude::*;

use crate::dictionary::{mode_products_except, Ensemble};
use crate::error::Result;
use crate::linalg::Mat;
use crate::patch::PatchShape;
use crate::stages::{Clusters, SlotCodes, Stages};

pub struct CpuStages<'a> {
    shape: PatchShape,
    patches: &'a [f32],
    clusters: Clusters,
    codes: SlotCodes,
}

impl<'a> CpuStages<'a> {
    pub fn new(shape: PatchShape, patches: &'a [f32]) -> CpuStages<'a> {
        CpuStages { shape, patches, clusters: Clusters::default(), codes: SlotCodes::default() }
    }

    fn patch(&self, slot: usize) -> Vec<f32> {
        let plen = self.shape.len();
        let p = self.clusters.order[slot];
        self.patches[p * plen..(p + 1) * plen].to_vec()
    }
}

impl Stages for CpuStages<'_> {
    fn load(&mut self, clusters: &Clusters, codes: Option<&SlotCodes>) -> Result<()> {
        self.clusters = clusters.clone();
        self.codes = codes.cloned().unwrap_or_default();
        Ok(())
    }

    fn grams(&mut self, n: usize) -> Result<Vec<Mat>> {
        let this = &*self;
        Ok((0..this.clusters.k())
            .map(|k| mode_gram(this.shape, n, this.clusters.slots(k), |s| this.patch(s), |s| this.patch(s)))
            .collect())
    }

    fn crosses(&mut self, ens: &Ensemble, n: usize) -> Result<Vec<Mat>> {
        let this = &*self;
        let plen = this.shape.len();
        Ok((0..this.clusters.k())
            .map(|k| {
                let dict = ens.dictionary(k);
                let coefficients = |s: usize| {
                    let mut z = vec![0f32; plen];
                    for e in this.codes.offsets[s] as usize..this.codes.offsets[s + 1] as usize {
                        z[this.codes.locations[e] as usize] = this.codes.values[e];
                    }
                    mode_products_except(&mut z, this.shape, dict, false, Some(n));
                    z
                };
                mode_gram(this.shape, n, this.clusters.slots(k), |s| this.patch(s), coefficients)
            })
            .collect())
    }
}

/// `sum_s A_s(n) B_s(n)^T` over the slots: the m x m (cross-)Gram matrix of mode `n`.
fn mode_gram(
    shape: PatchShape,
    n: usize,
    slots: std::ops::Range<usize>,
    a: impl Fn(usize) -> Vec<f32> + Sync,
    b: impl Fn(usize) -> Vec<f32> + Sync,
) -> Mat {
    let m = shape.modes()[n];
    let s = shape.strides()[n];
    let plen = shape.len();
    let partial = |i: usize| {
        let (ta, tb) = (a(i), b(i));
        let mut g = vec![0f64; m * m];
        for outer in 0..plen / (m * s) {
            for inner in 0..s {
                let base = outer * m * s + inner;
                for r in 0..m {
                    let x = ta[base + r * s] as f64;
                    for c in 0..m {
                        g[r * m + c] += x * tb[base + c * s] as f64;
                    }
                }
            }
        }
        g
    };
    // Fixed-size blocks reduced in order keep the sum independent of thread scheduling.
    let slots: Vec<usize> = slots.collect();
    let blocks: Vec<Vec<f64>> = slots
        .par_chunks(64)
        .map(|chunk| {
            chunk.iter().fold(vec![0f64; m * m], |mut acc, &i| {
                acc.iter_mut().zip(partial(i)).for_each(|(x, y)| *x += y);
                acc
            })
        })
        .collect();
    let mut g = Mat::zeros(m);
    for b in blocks {
        g.a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
    }
    g
}
