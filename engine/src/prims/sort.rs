//! Stable LSD radix sort of u32 or u64 keys, each with a u32 value, 8 bits per pass.
//!
//! Each pass is reduce-then-scan, all recorded in one [`Recorder`] as declared passes:
//! 1. `sort_histogram.comp`: every block of 16 x workgroup keys counts its 256 digits,
//!    written digit-major;
//! 2. the single-pass [`Scanner`] turns the histograms into output offsets;
//! 3. `sort_scatter.comp`: every block ranks its keys stably (subgroup ballots per digit
//!    bit, per-subgroup counters), reorders keys and values through shared memory, and
//!    writes each digit's run to its offset.
//!
//! Both kernels load all of a block's keys (and the scatter its values) into registers in
//! unrolled loops before using them, so each invocation has 16 loads in flight rather than
//! one; the scatter reads each digit's output offset once per block. An H100 sorts 2^26 u32
//! pairs in 4.7 ms this way (128-wide blocks).
//!
//! No step waits on another workgroup, so the sort is safe on devices that run workgroups
//! one after another (lavapipe). Passes alternate between the caller's buffers and the
//! scratch copies; u32 keys take 4 passes and u64 keys 8, both even, so the sorted result
//! ends in the caller's buffers.

use rayon::prelude::*;

use crate::commands::Recorder;
use crate::context::Context;
use crate::error::{EngineError, Result};
use crate::kernel::Kernel;
use crate::memory::{Buffer, Location};
use crate::prims::scan::{check_binding, check_len, check_workgroup, Scanner};
use crate::shaders::kernels;

/// Workgroup sizes (specialization constant 0) the sort kernels accept; shared memory
/// (per-subgroup digit counters plus a block of keys) rules out the larger ones on devices
/// with small subgroups, see [`Sorter::with_workgroup`].
pub const WORKGROUP_SIZES: &[u32] = &[32, 64, 128, 256, 512];

/// Largest workgroup size [`Sorter::new`] picks. Smaller blocks keep more of them resident
/// per multiprocessor, which hides the latency of the scatter's barrier-separated phases: on
/// an H100, 2^26 pairs sort in 4.7 ms at 128 (16 keys each) against 5.6 ms at 256.
pub const DEFAULT_WORKGROUP: u32 = 128;

/// Keys per invocation of a block (the shaders' specialization constant ITEMS).
const ITEMS: usize = 16;

/// Bits sorted per pass.
const DIGIT_BITS: u32 = 8;

/// Key types the radix sort handles: u32 and u64 (stored as little-endian 32-bit words).
pub trait SortKey: bytemuck::Pod + Ord + Send + Sync + private::Sealed {
    /// 32-bit words per key.
    const WORDS: u32;
}

impl SortKey for u32 {
    const WORDS: u32 = 1;
}

impl SortKey for u64 {
    const WORDS: u32 = 2;
}

mod private {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    n: u32,
    num_blocks: u32,
    shift: u32,
    key_words: u32,
    word: u32,
}

/// Device buffers a sort of `n` pairs needs besides the keys and values themselves.
pub struct SortScratch<K: SortKey> {
    keys: Buffer<K>,
    values: Buffer<u32>,
    hist: Buffer<u32>,
    offsets: Buffer<u32>,
    scan: Buffer<u32>,
    n: usize,
}

impl<K: SortKey> SortScratch<K> {
    /// The number of pairs this scratch was made for (it serves any smaller count too).
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether it was made for zero pairs.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// Radix-sort pipelines for one context.
pub struct Sorter {
    ctx: Context,
    workgroup: u32,
    histogram: Kernel<Push>,
    scatter: Kernel<Push>,
    scanner: Scanner,
}

impl Sorter {
    /// Creates the sort pipelines with the largest workgroup size that fits the device's
    /// shared memory, at most [`DEFAULT_WORKGROUP`].
    pub fn new(ctx: &Context) -> Result<Sorter> {
        let workgroup = WORKGROUP_SIZES
            .iter()
            .rev()
            .copied()
            .filter(|&wg| wg <= DEFAULT_WORKGROUP)
            .find(|&wg| Self::fits(ctx, wg))
            .ok_or_else(|| EngineError::Unsupported("radix sort: not enough shared memory".into()))?;
        Sorter::with_workgroup(ctx, workgroup)
    }

    /// Upper bound of the subgroups in a workgroup. Subgroups of at most 32 are assumed
    /// possible even where a larger size is reported, as drivers may pick a smaller one.
    fn max_subgroups(ctx: &Context, workgroup: u32) -> u32 {
        workgroup.div_ceil(ctx.info().subgroup_size.clamp(1, 32))
    }

    fn shared_bytes(ctx: &Context, workgroup: u32) -> u32 {
        4 * (Self::max_subgroups(ctx, workgroup) * 256 + 2 * 256 + ITEMS as u32 * workgroup)
    }

    fn fits(ctx: &Context, workgroup: u32) -> bool {
        Self::shared_bytes(ctx, workgroup) <= ctx.info().max_shared_memory_bytes
    }

    /// Creates the sort pipelines with the given workgroup size (one of [`WORKGROUP_SIZES`]
    /// whose shared memory fits the device), for tuning sweeps.
    pub fn with_workgroup(ctx: &Context, workgroup: u32) -> Result<Sorter> {
        check_workgroup(ctx, "radix sort", workgroup, WORKGROUP_SIZES)?;
        if !ctx.info().has_subgroup_ops(&["shuffle"]) {
            return Err(EngineError::Unsupported("radix sort: needs subgroup shuffle".into()));
        }
        if !Self::fits(ctx, workgroup) {
            return Err(EngineError::Unsupported(format!(
                "radix sort: workgroup size {workgroup} needs {} bytes of shared memory, device has {}",
                Self::shared_bytes(ctx, workgroup),
                ctx.info().max_shared_memory_bytes
            )));
        }
        Ok(Sorter {
            ctx: ctx.clone(),
            workgroup,
            histogram: ctx.kernel(&kernels::SORT_HISTOGRAM, &[workgroup, ITEMS as u32])?,
            scatter: ctx
                .kernel(&kernels::SORT_SCATTER, &[workgroup, Self::max_subgroups(ctx, workgroup), ITEMS as u32])?,
            scanner: Scanner::new(ctx)?,
        })
    }

    /// The workgroup size this sorter was built with.
    pub fn workgroup(&self) -> u32 {
        self.workgroup
    }

    fn num_blocks(&self, n: usize) -> usize {
        n.div_ceil(ITEMS * self.workgroup as usize)
    }

    /// Allocates the scratch buffers for sorting up to `n` pairs with keys of type `K`.
    pub fn scratch<K: SortKey>(&self, n: usize) -> Result<SortScratch<K>> {
        let hist_len = 256 * self.num_blocks(n);
        Ok(SortScratch {
            keys: self.ctx.buffer(n, Location::Device, "sort keys (ping-pong)")?,
            values: self.ctx.buffer(n, Location::Device, "sort values (ping-pong)")?,
            hist: self.ctx.buffer(hist_len, Location::Device, "sort histograms")?,
            offsets: self.ctx.buffer(hist_len, Location::Device, "sort offsets")?,
            scan: self.scanner.scratch(hist_len)?,
            n,
        })
    }

    /// Records a stable sort of `keys` (ascending) carrying `values[i]` along with
    /// `keys[i]`; `values` must hold at least `keys.len()` elements. The result replaces the
    /// contents of `keys` and `values`.
    pub fn record_sort_pairs<K: SortKey>(
        &self,
        rec: &mut Recorder,
        keys: &Buffer<K>,
        values: &Buffer<u32>,
        scratch: &SortScratch<K>,
    ) -> Result<()> {
        let n = keys.len();
        check_binding(&self.ctx, "sort keys", n, keys.bytes())?;
        check_len("sort values", values.len(), n)?;
        check_len("sort scratch", scratch.n, n)?;
        if n <= 1 {
            return Ok(());
        }
        let num_blocks = self.num_blocks(n);
        let hist_len = 256 * num_blocks;
        let hist = scratch.hist.range(0, hist_len);
        let passes = K::WORDS * 32 / DIGIT_BITS;
        for pass in 0..passes {
            let bit = pass * DIGIT_BITS;
            let push = Push {
                n: n as u32,
                num_blocks: num_blocks as u32,
                shift: bit % 32,
                key_words: K::WORDS,
                word: bit / 32,
            };
            let (src_k, src_v, dst_k, dst_v) = if pass % 2 == 0 {
                (keys.range(0, n), values.range(0, n), scratch.keys.range(0, n), scratch.values.range(0, n))
            } else {
                (scratch.keys.range(0, n), scratch.values.range(0, n), keys.range(0, n), values.range(0, n))
            };
            rec.pass(&self.histogram).read(&src_k).write(&hist).push(&push).dispatch_linear(num_blocks as u32)?;
            self.scanner.record_prefix(rec, &scratch.hist, hist_len, &scratch.offsets, &scratch.scan, false)?;
            rec.pass(&self.scatter)
                .read(&src_k)
                .read(&src_v)
                .read(&scratch.offsets.range(0, hist_len))
                .write(&dst_k)
                .write(&dst_v)
                .push(&push)
                .dispatch_linear(num_blocks as u32)?;
        }
        Ok(())
    }

    /// Sorts `keys` with their `values` in place (records, submits, waits).
    pub fn sort_pairs<K: SortKey>(&self, keys: &Buffer<K>, values: &Buffer<u32>) -> Result<()> {
        let scratch = self.scratch::<K>(keys.len())?;
        let mut rec = self.ctx.recorder()?;
        self.record_sort_pairs(&mut rec, keys, values, &scratch)?;
        rec.submit()?.wait()
    }
}

/// CPU reference (and baseline): stable sort of the pairs by key, multithreaded.
pub fn sort_pairs_cpu<K: SortKey>(keys: &[K], values: &[u32]) -> (Vec<K>, Vec<u32>) {
    let mut pairs: Vec<(K, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
    pairs.par_sort_by_key(|p| p.0);
    pairs.into_iter().unzip()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;
    use rand::{Rng, SeedableRng};

    /// Sorts random pairs at every awkward size and compares with the stable CPU sort; the
    /// values are the input positions, so any instability shows. Keys come from `key(rng)`.
    fn check<K: SortKey + std::fmt::Debug>(
        sorter: &Sorter,
        seed: u64,
        key: impl Fn(&mut rand_chacha::ChaCha8Rng) -> K,
    ) {
        let ctx = testing::context();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        for n in testing::AWKWARD_SIZES {
            let keys: Vec<K> = (0..n).map(|_| key(&mut rng)).collect();
            let values: Vec<u32> = (0..n as u32).collect();
            let k = ctx.upload(&keys, "keys").unwrap();
            let v = ctx.upload(&values, "values").unwrap();
            sorter.sort_pairs(&k, &v).unwrap();
            let (want_k, want_v) = sort_pairs_cpu(&keys, &values);
            assert!(ctx.download(&k).unwrap() == want_k, "keys, n = {n}");
            assert!(ctx.download(&v).unwrap() == want_v, "values, n = {n}");
        }
        testing::assert_no_validation_messages();
    }

    #[test]
    fn sort_u32_matches_stable_cpu_sort() {
        let sorter = Sorter::new(testing::context()).unwrap();
        check(&sorter, 7, |rng| rng.gen::<u32>());
        // Few distinct keys: long runs of equal keys test stability.
        check(&sorter, 8, |rng| rng.gen_range(0..5u32) << 13);
    }

    #[test]
    fn sort_u64_matches_stable_cpu_sort() {
        let sorter = Sorter::new(testing::context()).unwrap();
        check(&sorter, 9, |rng| rng.gen::<u64>());
        check(&sorter, 10, |rng| (rng.gen_range(0..7u64) << 40) | rng.gen_range(0..3u64));
    }

    #[test]
    fn sort_works_at_smallest_workgroup() {
        let ctx = testing::context();
        let wg = WORKGROUP_SIZES.iter().copied().find(|&wg| Sorter::with_workgroup(ctx, wg).is_ok()).unwrap();
        check(&Sorter::with_workgroup(ctx, wg).unwrap(), 11, |rng| rng.gen::<u32>());
    }
}
