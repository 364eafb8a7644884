//! Stream compaction of u32: keeps the elements (or the indices) whose flag is non-zero, in
//! their original order, and counts them.
//!
//! Built on the single-pass scan (`shaders/include/scan_tile.glsl`): the kernel
//! `shaders/engine/compact_u32.comp` scans the 0/1 predicates tile by tile with decoupled
//! look-back and scatters the kept elements in the same pass, so flags and values are read
//! once and no offsets array is written. The count lands in `scratch[TOTAL_INDEX]`
//! ([`crate::prims::scan::TOTAL_INDEX`]).

use crate::commands::Recorder;
use crate::context::Context;
use crate::error::Result;
use crate::memory::{Buffer, Location};
use crate::pipeline::ComputePipeline;
use crate::prims::scan::{check_binding, check_len, check_workgroup, tiles, DEFAULT_WORKGROUP, TOTAL_INDEX};
use crate::shaders;

pub use crate::prims::scan::WORKGROUP_SIZES;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    n: u32,
    num_tiles: u32,
    use_index: u32,
}

/// The compaction pipeline for one context.
pub struct Compactor {
    ctx: Context,
    pipe: ComputePipeline,
    workgroup: u32,
}

impl Compactor {
    /// Creates the compaction pipeline with the scan's default workgroup size.
    pub fn new(ctx: &Context) -> Result<Compactor> {
        Compactor::with_workgroup(ctx, DEFAULT_WORKGROUP)
    }

    /// Creates the compaction pipeline with the given workgroup size (one of
    /// [`WORKGROUP_SIZES`]), for tuning sweeps.
    pub fn with_workgroup(ctx: &Context, workgroup: u32) -> Result<Compactor> {
        check_workgroup(ctx, "compact", workgroup, WORKGROUP_SIZES)?;
        let pipe = ctx.compute_pipeline_for::<Push>("compact_u32", shaders::COMPACT_U32, 4, &[workgroup])?;
        Ok(Compactor { ctx: ctx.clone(), pipe, workgroup })
    }

    /// The workgroup size this compactor was built with.
    pub fn workgroup(&self) -> u32 {
        self.workgroup
    }

    /// Length in u32 of the scratch buffer compacting `n` elements needs.
    pub fn scratch_len(&self, n: usize) -> usize {
        tiles(n, self.workgroup).1
    }

    /// A device buffer of [`Compactor::scratch_len`]`(n)` u32.
    pub fn scratch(&self, n: usize) -> Result<Buffer<u32>> {
        self.ctx.buffer(self.scratch_len(n), Location::Device, "compact scratch")
    }

    /// Records: `output[0..count]` = the `values[i]` with `flags[i] != 0`, in order of `i`;
    /// `scratch[TOTAL_INDEX]` = count. `output` needs room for `values.len()` (the count is
    /// only known on the GPU). Elements of `output` past the count are left untouched.
    pub fn record_values(
        &self,
        rec: &mut Recorder,
        values: &Buffer<u32>,
        flags: &Buffer<u32>,
        output: &Buffer<u32>,
        scratch: &Buffer<u32>,
    ) -> Result<()> {
        check_len("compact flags", flags.len(), values.len())?;
        self.record(rec, values.len(), values, flags, output, scratch, false)
    }

    /// Records: `output[0..count]` = the indices `i` with `flags[i] != 0`, ascending;
    /// `scratch[TOTAL_INDEX]` = count. `output` needs room for `flags.len()`.
    pub fn record_indices(
        &self,
        rec: &mut Recorder,
        flags: &Buffer<u32>,
        output: &Buffer<u32>,
        scratch: &Buffer<u32>,
    ) -> Result<()> {
        self.record(rec, flags.len(), flags, flags, output, scratch, true)
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        rec: &mut Recorder,
        n: usize,
        values: &Buffer<u32>,
        flags: &Buffer<u32>,
        output: &Buffer<u32>,
        scratch: &Buffer<u32>,
        use_index: bool,
    ) -> Result<()> {
        let (num_tiles, scratch_len) = tiles(n, self.workgroup);
        check_binding(&self.ctx, "compact input", n, 4 * n as u64)?;
        check_len("compact output", output.len(), n)?;
        check_len("compact scratch", scratch.len(), scratch_len)?;
        rec.fill(scratch, 0);
        rec.barrier();
        rec.dispatch_linear(
            &self.pipe,
            &[flags.slice(0, n), values.slice(0, n), output.slice(0, n), scratch.binding()],
            &Push { n: n as u32, num_tiles: num_tiles as u32, use_index: use_index as u32 },
            num_tiles as u32,
        );
        Ok(())
    }

    fn run(&self, values: &Buffer<u32>, flags: &Buffer<u32>, use_index: bool) -> Result<(Buffer<u32>, usize)> {
        let n = if use_index { flags.len() } else { values.len() };
        let output = self.ctx.buffer(n, Location::Device, "compact output")?;
        let scratch = self.scratch(n)?;
        let mut rec = self.ctx.recorder()?;
        if use_index {
            self.record_indices(&mut rec, flags, &output, &scratch)?;
        } else {
            self.record_values(&mut rec, values, flags, &output, &scratch)?;
        }
        rec.submit()?.wait()?;
        let count = self.ctx.download_range(&scratch, TOTAL_INDEX, 1)?[0] as usize;
        Ok((output, count))
    }

    /// The kept values in a new device buffer (of `values.len()` slots) and their count.
    pub fn values(&self, values: &Buffer<u32>, flags: &Buffer<u32>) -> Result<(Buffer<u32>, usize)> {
        self.run(values, flags, false)
    }

    /// The indices of the non-zero flags in a new device buffer (of `flags.len()` slots) and
    /// their count.
    pub fn indices(&self, flags: &Buffer<u32>) -> Result<(Buffer<u32>, usize)> {
        self.run(flags, flags, true)
    }
}

/// CPU reference: the values whose flag is non-zero, in order.
pub fn values_cpu(values: &[u32], flags: &[u32]) -> Vec<u32> {
    values.iter().zip(flags).filter(|(_, &f)| f != 0).map(|(&v, _)| v).collect()
}

/// CPU reference: the indices of the non-zero flags, ascending.
pub fn indices_cpu(flags: &[u32]) -> Vec<u32> {
    flags.iter().enumerate().filter(|(_, &f)| f != 0).map(|(i, _)| i as u32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;
    use rand::{Rng, SeedableRng};

    #[test]
    fn compaction_matches_cpu_at_awkward_sizes() {
        let ctx = testing::context();
        let compactor = Compactor::new(ctx).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        for n in testing::AWKWARD_SIZES {
            for keep in [0.0, 0.3, 1.0] {
                let values: Vec<u32> = (0..n).map(|_| rng.gen_range(1..u32::MAX)).collect();
                // Flags are arbitrary non-zero words where kept, to check "non-zero" not "== 1".
                let flags: Vec<u32> =
                    (0..n).map(|_| if rng.gen_bool(keep) { rng.gen_range(1..u32::MAX) } else { 0 }).collect();
                let v = ctx.upload(&values, "values").unwrap();
                let f = ctx.upload(&flags, "flags").unwrap();
                let want = values_cpu(&values, &flags);
                let (out, count) = compactor.values(&v, &f).unwrap();
                assert_eq!(count, want.len(), "count, n = {n}, keep = {keep}");
                assert_eq!(ctx.download_range(&out, 0, count).unwrap(), want, "values, n = {n}, keep = {keep}");
                let want = indices_cpu(&flags);
                let (out, count) = compactor.indices(&f).unwrap();
                assert_eq!(count, want.len(), "index count, n = {n}, keep = {keep}");
                assert_eq!(ctx.download_range(&out, 0, count).unwrap(), want, "indices, n = {n}, keep = {keep}");
            }
        }
        testing::assert_no_validation_messages();
    }
}
