//! The k-means start on the GPU, the twin of [`crate::cpu::kmeans`] with the same seed, the same
//! random numbers and the same rules, so the fit's start costs GPU time rather than K passes
//! over the samples on the host.
//!
//! - Seeding (`kmeans_near.comp`, `kmeans_draw.comp`): D(x), the squared distance to the
//!   nearest chosen centre, lives on the GPU. Each step, one kernel folds the newest centre
//!   into D and sums D per block of 256 samples; one workgroup then draws the next centre
//!   by prefix sums (over chunks of blocks, the chosen chunk's blocks, the chosen block's
//!   samples) from a uniform drawn on the host by the CPU twin's generator and uploaded once.
//!   D is f32 (the engine's u32 scan would need a fixed point that overflows or loses small
//!   distances), so the prefix sums are this module's own deterministic trees. Many steps go
//!   into one submission; nothing returns to the host until the last centre is chosen.
//! - Lloyd (`kmeans_assign.comp`): the nearest centre of every sample, centres tiled in
//!   shared memory; the labels come back and the centres are updated in f64 on the host,
//!   one O(samples) pass shared with the CPU twin (`kmeans::lloyd`).
//!
//! f32 against the twin's f64: a draw or an assignment can differ at a near tie; the
//! outcome then differs only as much as two equally good starts do.

use engine::{Buffer, Context, Kernel, Location};
use kit::rng::Rng;

use crate::cpu::kmeans::{below, centres_at, lloyd, model_from_labels};
use crate::data::Grid;
use crate::model::Model;
use crate::shaders::kernels;

/// Samples per workgroup of every k-means kernel (the shaders' `local_size_x`).
const BLOCK: usize = 256;

/// Seeding steps per submission: enough to hide the submission cost, few enough for a
/// progress bar that moves and no watchdog trouble.
const STEPS_PER_SUBMIT: usize = 256;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct NearPush {
    n: u32,
    step: u32,
    first: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct DrawPush {
    n: u32,
    blocks: u32,
    step: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct AssignPush {
    n: u32,
    k: u32,
}

/// The k-means pipelines and the samples on one device.
pub struct GpuKmeans {
    ctx: Context,
    d: usize,
    n: usize,
    samples: Buffer<f32>,
    near_pipe: Kernel<NearPush>,
    draw_pipe: Kernel<DrawPush>,
    assign_pipe: Kernel<AssignPush>,
}

impl GpuKmeans {
    /// Uploads `samples` (`n x d`, d at most 7, at least one sample) and builds the pipelines.
    pub fn new(ctx: &Context, samples: &[f32], d: usize) -> engine::Result<GpuKmeans> {
        let n = samples.len() / d;
        if !(1..=7).contains(&d) || n == 0 || !samples.len().is_multiple_of(d) || samples.len() > u32::MAX as usize {
            return Err(engine::EngineError::InvalidInput(format!(
                "k-means: {} values are not samples of dimension {d} (1 to 7)",
                samples.len()
            )));
        }
        let spec = [d as u32];
        Ok(GpuKmeans {
            ctx: ctx.clone(),
            d,
            n,
            samples: ctx.upload(samples, "k-means samples")?,
            near_pipe: ctx.kernel(&kernels::KMEANS_NEAR, &spec)?,
            draw_pipe: ctx.kernel(&kernels::KMEANS_DRAW, &spec)?,
            assign_pipe: ctx.kernel(&kernels::KMEANS_ASSIGN, &spec)?,
        })
    }

    /// k-means++ seeding of `k` centres (1 to n): the first is sample `first`, step j draws
    /// with `uniforms[j - 1]`. Returns the chosen sample indices and the final D; ticks once
    /// per centre.
    pub fn seed(
        &self,
        k: usize,
        first: u32,
        uniforms: &[f32],
        tick: &mut dyn FnMut(),
    ) -> engine::Result<(Vec<u32>, Vec<f32>)> {
        let (ctx, n) = (&self.ctx, self.n);
        if k == 0 || k > n || uniforms.len() + 1 < k || first as usize >= n {
            return Err(engine::EngineError::InvalidInput(format!("k-means: cannot seed {k} of {n} samples")));
        }
        let blocks = n.div_ceil(BLOCK);
        let mut init = vec![0u32; k];
        init[0] = first;
        let picks = ctx.upload(&init, "k-means picks")?;
        // Step j reads uniforms[j]; index 0 is unused.
        let u: Vec<f32> = std::iter::once(0.0).chain(uniforms.iter().copied()).collect();
        let u = ctx.upload(&u, "k-means uniforms")?;
        let near = ctx.buffer::<f32>(n, Location::Device, "k-means D")?;
        let block_sums = ctx.buffer::<f32>(blocks, Location::Device, "k-means block sums")?;
        let mut step = 0;
        while step < k {
            let end = (step + STEPS_PER_SUBMIT).min(k);
            let mut rec = ctx.recorder()?;
            for j in step..end {
                if j > 0 {
                    let push = DrawPush { n: n as u32, blocks: blocks as u32, step: j as u32 };
                    rec.pass(&self.draw_pipe)
                        .read(&near)
                        .read(&block_sums)
                        .read(&u)
                        .read_write(&picks)
                        .push(&push)
                        .dispatch([1, 1, 1])?;
                }
                // D after the last centre is only for the tests; one more pass is cheap.
                let push = NearPush { n: n as u32, step: j as u32, first: (j == 0) as u32 };
                rec.pass(&self.near_pipe)
                    .read(&self.samples)
                    .read(&picks)
                    .read_write(&near)
                    .write(&block_sums)
                    .push(&push)
                    .dispatch_linear(blocks as u32)?;
            }
            rec.submit()?.wait()?;
            (step..end).for_each(|_| tick());
            step = end;
        }
        Ok((ctx.download(&picks)?, ctx.download(&near)?))
    }

    /// The nearest of `centres` (`k x d`, in f64, used as f32) for every sample.
    pub fn assign(&self, centres: &[f64]) -> engine::Result<Vec<u32>> {
        let ctx = &self.ctx;
        let k = centres.len() / self.d;
        let c: Vec<f32> = centres.iter().map(|&v| v as f32).collect();
        let c = ctx.upload(&c, "k-means centres")?;
        let labels = ctx.buffer::<u32>(self.n, Location::Device, "k-means labels")?;
        let mut rec = ctx.recorder()?;
        let push = AssignPush { n: self.n as u32, k: k as u32 };
        rec.pass(&self.assign_pipe)
            .read(&self.samples)
            .read(&c)
            .write(&labels)
            .push(&push)
            .dispatch_linear(self.n.div_ceil(BLOCK) as u32)?;
        rec.submit()?.wait()?;
        ctx.download(&labels)
    }
}

/// The GPU twin of [`crate::cpu::kmeans::kmeans_init`]: the same seed gives the same random
/// numbers and, up to near ties, the same start; ticks [`crate::cpu::kmeans::steps`]`(k)` times.
pub fn kmeans_init_gpu(
    ctx: &Context,
    grid: &Grid,
    k: usize,
    reg: &[f64],
    seed: u64,
    tick: &mut dyn FnMut(),
) -> engine::Result<Model> {
    let samples = grid.samples();
    let d = grid.coord_dims() + 3;
    let km = GpuKmeans::new(ctx, &samples, d)?;
    let (first, uniforms) = draws(seed, grid.len(), k);
    let (picks, _) = km.seed(k, first, &uniforms, tick)?;
    let mut centres = centres_at(&samples, &picks, d);
    let label = lloyd(&samples, d, &mut centres, |c: &[f64]| km.assign(c), tick)?;
    Ok(model_from_labels(grid, &samples, &centres, &label, reg))
}

/// The random numbers the CPU seeding draws from `seed` for `k` centres of `n` samples: the
/// first centre, then one uniform per further step.
pub(crate) fn draws(seed: u64, n: usize, k: usize) -> (u32, Vec<f32>) {
    let mut rng = Rng::new(seed);
    let first = below(&mut rng, n) as u32;
    (first, (1..k).map(|_| rng.uniform() as f32).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::kmeans::{inertia, nearest_labels, seed_picks};

    /// `len` values uniform in [0, 1).
    fn random(len: usize, seed: u64) -> Vec<f32> {
        let mut rng = Rng::new(seed);
        (0..len).map(|_| rng.uniform() as f32).collect()
    }

    /// GPU and CPU seeding from the same seed: the same centres, and D equal up to f32.
    fn check_seeding(samples: &[f32], d: usize, k: usize, seed: u64) {
        let ctx = engine::testing::context();
        let n = samples.len() / d;
        let (cpu_picks, cpu_near) = seed_picks(samples, d, k, &mut Rng::new(seed), &mut || {});
        let km = GpuKmeans::new(ctx, samples, d).unwrap();
        let (first, uniforms) = draws(seed, n, k);
        let mut ticks = 0;
        let (picks, near) = km.seed(k, first, &uniforms, &mut || ticks += 1).unwrap();
        assert_eq!(ticks, k);
        assert_eq!(picks, cpu_picks, "n = {n}, k = {k}");
        for (i, (&g, &c)) in near.iter().zip(&cpu_near).enumerate() {
            assert!((g as f64 - c).abs() <= 1e-5 * c.max(1.0), "D[{i}] = {g}, CPU {c} (n = {n})");
        }
    }

    #[test]
    fn seeding_matches_cpu_at_awkward_sizes() {
        // 70001 samples make 274 blocks: chunks of two blocks in the draw.
        for (n, seed) in [(1, 1), (255, 2), (257, 3), (1000, 4), (4099, 5), (70001, 6)] {
            let d = 5;
            check_seeding(&random(n * d, seed), d, n.min(37), seed);
        }
        engine::testing::assert_no_validation_messages();
    }

    #[test]
    fn seeding_with_coincident_samples_draws_uniformly_like_cpu() {
        // Three distinct points repeated: after three centres every D is zero.
        let d = 7;
        let points = random(3 * d, 9);
        let samples: Vec<f32> = (0..601).flat_map(|i| points[(i % 3) * d..(i % 3 + 1) * d].to_vec()).collect();
        check_seeding(&samples, d, 9, 10);
        engine::testing::assert_no_validation_messages();
    }

    #[test]
    fn assignment_matches_cpu_up_to_near_ties() {
        let ctx = engine::testing::context();
        let d = 5;
        for (n, k) in [(1, 1), (300, 255), (1031, 257), (777, 600)] {
            let samples = random(n * d, n as u64);
            let centres: Vec<f64> = random(k * d, k as u64 + 7).iter().map(|&v| v as f64).collect();
            let labels = GpuKmeans::new(ctx, &samples, d).unwrap().assign(&centres).unwrap();
            let cpu = nearest_labels(&samples, &centres, d);
            for (i, (&g, &c)) in labels.iter().zip(&cpu).enumerate() {
                if g != c {
                    let s = &samples[i * d..(i + 1) * d];
                    let e = |j: u32| inertia(s, &centres, &[j], d);
                    assert!((e(g) - e(c)).abs() < 1e-6, "sample {i}: GPU {g} ({}), CPU {c} ({})", e(g), e(c));
                }
            }
        }
        engine::testing::assert_no_validation_messages();
    }

    /// The k-means cost of the CPU and the GPU start for `k` centres of `grid`, and how many
    /// leading seeds agree.
    fn both_starts(grid: &Grid, k: usize, seed: u64) -> (f64, f64, usize) {
        let (samples, d) = (grid.samples(), grid.coord_dims() + 3);
        let (picks, _) = seed_picks(&samples, d, k, &mut Rng::new(seed), &mut || {});
        let mut cpu = centres_at(&samples, &picks, d);
        let cpu_label =
            lloyd(&samples, d, &mut cpu, |c: &[f64]| Ok::<_, ()>(nearest_labels(&samples, c, d)), &mut || {}).unwrap();
        let km = GpuKmeans::new(engine::testing::context(), &samples, d).unwrap();
        let (first, uniforms) = draws(seed, grid.len(), k);
        let (gpu_picks, _) = km.seed(k, first, &uniforms, &mut || {}).unwrap();
        let same = picks.iter().zip(&gpu_picks).take_while(|(a, b)| a == b).count();
        let mut gpu = centres_at(&samples, &gpu_picks, d);
        let gpu_label = lloyd(&samples, d, &mut gpu, |c: &[f64]| km.assign(c), &mut || {}).unwrap();
        (inertia(&samples, &cpu, &cpu_label, d), inertia(&samples, &gpu, &gpu_label, d), same)
    }

    #[test]
    fn gpu_start_matches_cpu_quality() {
        let ctx = engine::testing::context();
        let grid = crate::data::sample_image(41, 29);
        let (k, seed) = (45, 7);
        let (a, b, _) = both_starts(&grid, k, seed);
        assert!((a - b).abs() <= 0.01 * a, "inertia CPU {a}, GPU {b}");
        let mut ticks = 0;
        let model = kmeans_init_gpu(ctx, &grid, k, &[1e-4; 5], seed, &mut || ticks += 1).unwrap();
        assert_eq!(ticks, crate::cpu::kmeans::steps(k));
        model.validate().unwrap();
        engine::testing::assert_no_validation_messages();
    }

    /// The CPU and GPU starts on a real image (`SMOE_KMEANS_IMAGE`, `SMOE_KMEANS_K` kernels):
    /// `cargo test -p tessera-smoe --lib -- --ignored --nocapture` on a GPU.
    #[test]
    #[ignore]
    fn image_start_quality() {
        let path = std::env::var("SMOE_KMEANS_IMAGE").expect("SMOE_KMEANS_IMAGE");
        let k = std::env::var("SMOE_KMEANS_K").map_or(1000, |v| v.parse().unwrap());
        let grid = Grid::load(std::path::Path::new(&path)).unwrap();
        let (a, b, same) = both_starts(&grid, k, 0x5eed_50e5);
        println!("k = {k}: inertia CPU {a:.6}, GPU {b:.6} ({:+.3}%), first {same} seeds equal", 100.0 * (b - a) / a);
        assert!((a - b).abs() <= 0.01 * a);
    }
}
