//! The training stages on the GPU, on the engine's batched GEMM: the patches are uploaded
//! once; per assignment the slot order (patches grouped by dictionary) and the dense
//! coefficient tensors (scattered from the sparse codes); per mode n
//! 1. Z = S x_m U_m for every mode m != n: one engine `ModeProduct` per dictionary and
//!    mode, each over its cluster's slots, with the matrices of that dictionary;
//! 2. the mode-n unfoldings of the (gathered) patches and of Z (`train_unfold.comp`);
//! 3. one batched GEMM over all slots, `C_s = T_s(n) Z_s(n)^T` (m x m per patch, f32 sums
//!    of length plen / m), downloaded and summed per cluster in f64 on the host, where the
//!    small SVDs run too. The CPU twin is [`crate::cpu::train`].

use engine::prims::gemm::{BatchedGemm, Gemm, ModeProduct};
use engine::{Buffer, Context, Kernel, Location};
use rayon::prelude::*;

use crate::dictionary::{mode_offsets, Ensemble};
use crate::error::Result;
use crate::linalg::Mat;
use crate::patch::{PatchShape, MODES};
use crate::shaders::kernels;
use crate::stages::{Clusters, SlotCodes, Stages};

/// Invocations per workgroup of the unfold and scatter kernels (fixed in their sources).
const WORKGROUP: u32 = 256;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct UnfoldPush {
    slots: u32,
    plen: u32,
    m: u32,
    q: u32,
    indexed: u32,
}

pub struct GpuStages {
    ctx: Context,
    shape: PatchShape,
    gemm: Gemm,
    unfold: Kernel<UnfoldPush>,
    /// Its push constants are the coefficient count alone.
    scatter: Kernel<u32>,
    /// The training patches in their original order.
    patches: Buffer<f32>,
    /// Slot -> patch.
    index: Buffer<u32>,
    /// Dense coefficients per slot.
    coefficients: Buffer<f32>,
    /// Ping-pong buffers of the mode-product chain; the free one takes Z's unfolding.
    z: [Buffer<f32>; 2],
    /// The unfolded patches.
    unfolded: Buffer<f32>,
    /// One m x m product per slot.
    partial: Buffer<f32>,
    dictionaries: Option<Buffer<f32>>,
    clusters: Clusters,
}

impl GpuStages {
    pub fn new(ctx: &Context, shape: PatchShape, patches: &[f32]) -> Result<GpuStages> {
        let plen = shape.len();
        let slots = patches.len() / plen;
        let unfold = ctx.kernel(&kernels::TRAIN_UNFOLD, &[])?;
        let scatter = ctx.kernel(&kernels::TRAIN_SCATTER, &[])?;
        let dense = |what| ctx.buffer::<f32>(patches.len().max(1), Location::Device, what);
        let largest = shape.modes().into_iter().max().unwrap_or(1);
        Ok(GpuStages {
            ctx: ctx.clone(),
            shape,
            gemm: Gemm::new(ctx)?,
            unfold,
            scatter,
            patches: ctx.upload(patches, "training patches")?,
            index: ctx.buffer::<u32>(slots.max(1), Location::Device, "training slot order")?,
            coefficients: dense("training coefficients")?,
            z: [dense("training mode products")?, dense("training mode products")?],
            unfolded: dense("training unfolded patches")?,
            partial: ctx.buffer::<f32>((slots * largest * largest).max(1), Location::Device, "training Gram parts")?,
            dictionaries: None,
            clusters: Clusters::default(),
        })
    }

    /// Records the mode-n unfolding of `src` (through the slot order when `indexed`) into `dst`.
    fn record_unfold(
        &self,
        rec: &mut engine::Recorder,
        n: usize,
        src: &Buffer<f32>,
        indexed: bool,
        dst: &Buffer<f32>,
    ) -> Result<()> {
        let plen = self.shape.len();
        let push = UnfoldPush {
            slots: self.clusters.order.len() as u32,
            plen: plen as u32,
            m: self.shape.modes()[n] as u32,
            q: self.shape.strides()[n] as u32,
            indexed: indexed as u32,
        };
        let groups = (self.clusters.order.len() * plen).div_ceil(WORKGROUP as usize) as u32;
        rec.pass(&self.unfold).read(src).read(&self.index).write(dst).push(&push).dispatch_linear(groups)?;
        Ok(())
    }

    /// Records `C_s = A_s(n) B_s(n)^T` for every slot over the unfoldings `a` and `b`, then
    /// downloads and sums them per cluster.
    fn grams_of(&self, mut rec: engine::Recorder, n: usize, a: &Buffer<f32>, b: &Buffer<f32>) -> Result<Vec<Mat>> {
        let m = self.shape.modes()[n];
        let slots = self.clusters.order.len();
        let desc = BatchedGemm::packed(slots, m, m, self.shape.len() / m).transposed(false, true);
        self.gemm.record(&mut rec, &desc, a, b, &self.partial)?;
        rec.submit()?.wait()?;
        let parts = self.ctx.download_range(&self.partial, 0, slots * m * m)?;
        Ok((0..self.clusters.k())
            .into_par_iter()
            .map(|k| {
                let mut g = Mat::zeros(m);
                for s in self.clusters.slots(k) {
                    g.a.iter_mut().zip(&parts[s * m * m..(s + 1) * m * m]).for_each(|(x, &y)| *x += y as f64);
                }
                g
            })
            .collect())
    }
}

impl Stages for GpuStages {
    fn load(&mut self, clusters: &Clusters, codes: Option<&SlotCodes>) -> Result<()> {
        let index: Vec<u32> = clusters.order.iter().map(|&p| p as u32).collect();
        self.ctx.write(&self.index, 0, &index)?;
        self.clusters = clusters.clone();
        let Some(codes) = codes else { return Ok(()) };
        let plen = self.shape.len();
        let dest: Vec<u32> = (0..clusters.order.len())
            .flat_map(|s| {
                let range = codes.offsets[s] as usize..codes.offsets[s + 1] as usize;
                codes.locations[range].iter().map(move |&l| (s * plen) as u32 + l)
            })
            .collect();
        let mut rec = self.ctx.recorder()?;
        rec.fill(&self.coefficients, 0);
        let count = dest.len();
        if count > 0 {
            let dest = self.ctx.upload(&dest, "training coefficient places")?;
            let values = self.ctx.upload(&codes.values, "training coefficient values")?;
            let groups = count.div_ceil(WORKGROUP as usize) as u32;
            rec.pass(&self.scatter)
                .read(&dest)
                .read(&values)
                .write(&self.coefficients)
                .push(&(count as u32))
                .dispatch_linear(groups)?;
        }
        rec.submit()?.wait()?;
        Ok(())
    }

    fn grams(&mut self, n: usize) -> Result<Vec<Mat>> {
        let mut rec = self.ctx.recorder()?;
        self.record_unfold(&mut rec, n, &self.patches, true, &self.unfolded)?;
        self.grams_of(rec, n, &self.unfolded, &self.unfolded)
    }

    fn crosses(&mut self, ens: &Ensemble, n: usize) -> Result<Vec<Mat>> {
        match &self.dictionaries {
            Some(d) if d.len() == ens.mats.len() => self.ctx.write(d, 0, &ens.mats)?,
            _ => self.dictionaries = Some(self.ctx.upload(&ens.mats, "training dictionaries")?),
        }
        let dicts = self.dictionaries.as_ref().expect("uploaded above");
        let plen = self.shape.len();
        let (offsets, dlen) = mode_offsets(self.shape);
        let modes = self.shape.modes();
        let mut rec = self.ctx.recorder()?;
        // Z = S x_m U_m over every other mode, dictionary by dictionary.
        let mut src = &self.coefficients;
        let mut at = 0;
        for mode in (0..MODES).filter(|&m| m != n) {
            let dst = &self.z[at];
            for k in 0..self.clusters.k() {
                let slots = self.clusters.slots(k);
                if slots.is_empty() {
                    continue;
                }
                let product = ModeProduct {
                    dims: modes.to_vec(),
                    mode,
                    batch: slots.len(),
                    u_rows: modes[mode],
                    transpose_u: false,
                };
                let first = slots.start * plen;
                let matrix = k * dlen + offsets[mode];
                self.gemm.record_mode_product_at(&mut rec, &product, (src, first), (dicts, matrix), (dst, first))?;
            }
            src = dst;
            at = 1 - at;
        }
        self.record_unfold(&mut rec, n, src, false, &self.z[at])?;
        self.record_unfold(&mut rec, n, &self.patches, true, &self.unfolded)?;
        self.grams_of(rec, n, &self.unfolded, &self.z[at])
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::cpu::train::CpuStages;

    /// Largest |GPU - CPU| entry over the largest |CPU| entry of each matrix. The GPU sums
    /// each patch's plen / m products in f32 (the CPU twin in f64) after an f32 mode-product
    /// chain in another order: a few ulps of f32 on sums of <= 315 terms of like sign.
    const BOUND: f64 = 2e-5;

    fn worst(gpu: &[Mat], cpu: &[Mat]) -> f64 {
        gpu.iter()
            .zip(cpu)
            .map(|(g, c)| {
                let scale = c.a.iter().fold(0f64, |m, x| m.max(x.abs()));
                let diff = g.a.iter().zip(&c.a).fold(0f64, |m, (x, y)| m.max((x - y).abs()));
                if scale == 0.0 {
                    diff
                } else {
                    diff / scale
                }
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn gpu_stages_match_the_cpu_twin_at_awkward_sizes() {
        let ctx = engine::testing::context();
        let shape = PatchShape { my: 7, mx: 5, mu: 3, mv: 3 };
        let (plen, n, k) = (shape.len(), 13, 4);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let patches: Vec<f32> = (0..n * plen).map(|_| rng.gen_range(0.05f32..1.0)).collect();
        // Uneven clusters, one of them empty.
        let membership: Vec<u32> = (0..n).map(|i| [0, 2, 2, 3][i % 4]).collect();
        let clusters = Clusters::from_membership(&membership, k);
        let mut codes = SlotCodes { offsets: vec![0], ..Default::default() };
        for _ in 0..n {
            let mut places: Vec<u32> = (0..plen as u32).filter(|_| rng.gen_bool(0.1)).collect();
            places.dedup();
            codes.values.extend(places.iter().map(|_| rng.gen_range(-2.0f32..2.0)));
            codes.locations.extend(places);
            codes.offsets.push(codes.locations.len() as u32);
        }
        let ens = Ensemble::random(shape, k, 3);
        let mut cpu = CpuStages::new(shape, &patches);
        let mut gpu = GpuStages::new(ctx, shape, &patches).unwrap();
        for stages in [&mut cpu as &mut dyn Stages, &mut gpu] {
            stages.load(&clusters, Some(&codes)).unwrap();
        }
        for mode in 0..MODES {
            let (g, c) = (gpu.grams(mode).unwrap(), cpu.grams(mode).unwrap());
            assert!(worst(&g, &c) < BOUND, "grams of mode {mode}: {:e}", worst(&g, &c));
            let (g, c) = (gpu.crosses(&ens, mode).unwrap(), cpu.crosses(&ens, mode).unwrap());
            assert!(worst(&g, &c) < BOUND, "crosses of mode {mode}: {:e}", worst(&g, &c));
            assert!(c[1].a.iter().all(|&x| x == 0.0), "the empty cluster sums nothing");
        }
        engine::testing::assert_no_validation_messages();
    }
}
