//! What training's two backends share (the leaf both [`crate::train`], which drives the
//! iterations, and the stages of [`crate::cpu::train`] and [`crate::gpu::train`] use): the
//! patches grouped by dictionary, their dequantised coefficients, and the stages' trait.

use crate::codes::Codes;
use crate::dictionary::Ensemble;
use crate::error::Result;
use crate::linalg::Mat;
use crate::select::Quantizer;

/// Patches grouped by dictionary: slot `s` holds patch `order[s]`, and dictionary k owns
/// slots `bounds[k]..bounds[k + 1]` (patches in ascending order within a cluster).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Clusters {
    pub order: Vec<usize>,
    pub bounds: Vec<usize>,
}

impl Clusters {
    /// Groups patch `i` into cluster `membership[i]` (< k).
    pub fn from_membership(membership: &[u32], k: usize) -> Clusters {
        let mut bounds = vec![0; k + 1];
        membership.iter().for_each(|&m| bounds[m as usize + 1] += 1);
        (0..k).for_each(|i| bounds[i + 1] += bounds[i]);
        let mut next = bounds.clone();
        let mut order = vec![0; membership.len()];
        for (i, &m) in membership.iter().enumerate() {
            order[next[m as usize]] = i;
            next[m as usize] += 1;
        }
        Clusters { order, bounds }
    }

    pub fn k(&self) -> usize {
        self.bounds.len().saturating_sub(1)
    }

    pub fn slots(&self, k: usize) -> std::ops::Range<usize> {
        self.bounds[k]..self.bounds[k + 1]
    }
}

/// The dequantised sparse coefficients of every slot: slot s owns entries
/// `offsets[s]..offsets[s + 1]` of `locations` and `values`.
#[derive(Clone, Debug, Default)]
pub struct SlotCodes {
    pub offsets: Vec<u32>,
    pub locations: Vec<u32>,
    pub values: Vec<f32>,
}

impl SlotCodes {
    pub fn new(clusters: &Clusters, codes: &Codes, step: f32) -> SlotCodes {
        let q = Quantizer::new(step);
        let mut out = SlotCodes { offsets: vec![0], ..Default::default() };
        for &p in &clusters.order {
            let range = codes.offsets[p]..codes.offsets[p + 1];
            out.locations.extend_from_slice(&codes.locations[range.clone()]);
            out.values.extend(codes.levels[range].iter().map(|&l| q.value(l)));
            out.offsets.push(out.locations.len() as u32);
        }
        out
    }
}

/// The heavy sums of training, per cluster (see [`crate::cpu::train`] and [`crate::gpu::train`], the twins).
pub trait Stages {
    /// Sets the slot order and, for [`Stages::crosses`], the coefficients of every slot.
    fn load(&mut self, clusters: &Clusters, codes: Option<&SlotCodes>) -> Result<()>;
    /// Per cluster, `sum T_(n) T_(n)^T` over its patches.
    fn grams(&mut self, n: usize) -> Result<Vec<Mat>>;
    /// Per cluster k, `sum T_(n) Z_(n)^T` with `Z = S x_m U_m` over every mode m != n, S
    /// the slot's coefficients and U_m the matrices of dictionary k of `ens`.
    fn crosses(&mut self, ens: &Ensemble, n: usize) -> Result<Vec<Mat>>;
}
