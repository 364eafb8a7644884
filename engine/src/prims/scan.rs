//! Prefix sums of u32 (exclusive and inclusive, wrapping), in one pass over the data.
//!
//! The kernel (`shaders/engine/scan_u32.comp` with `shaders/include/scan_tile.glsl`) is a
//! single-pass scan with decoupled look-back: each workgroup scans a tile of 16 elements per
//! invocation with subgroup scans, publishes its aggregate, and looks back over earlier
//! tiles' descriptors for its prefix. Tiles are handed out by an atomic ticket so a tile
//! waits only for tiles that already started; that keeps it deadlock-free on lavapipe, whose
//! workgroups are not all resident at once. Reads and writes are 16-byte coalesced, so the
//! scan moves each element once in and once out (about 8 bytes per element).
//!
//! The main API records into the caller's [`Recorder`] ([`Scanner::record_exclusive`],
//! [`Scanner::record_inclusive`]) with a scratch buffer of [`Scanner::scratch_len`] u32; after
//! the recording completes, `scratch[TOTAL_INDEX]` holds the sum of all elements. As with
//! every `record_*` in [`crate::prims`], put `rec.barrier()` between the work producing the
//! inputs and the scan, and between the scan and the work consuming its outputs.

use crate::commands::Recorder;
use crate::context::Context;
use crate::error::{EngineError, Result};
use crate::memory::{Buffer, Location};
use crate::pipeline::{ComputePipeline, PipelineDesc};
use crate::shaders;

/// Workgroup sizes (specialization constant 0) the scan and compaction kernels accept; the
/// device's limits may rule out the largest.
pub const WORKGROUP_SIZES: &[u32] = &[64, 128, 256, 512, 1024];

/// Workgroup size [`Scanner::new`] uses.
pub const DEFAULT_WORKGROUP: u32 = 256;

/// Index in the scratch buffer that holds the total (the sum of all inputs, or the number
/// of kept elements for compaction) once the recording has completed.
pub const TOTAL_INDEX: usize = 1;

/// Elements per invocation of one tile (4 rows of uvec4).
const PER_INVOCATION: usize = 16;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    n: u32,
    num_tiles: u32,
    flag: u32,
}

/// Checks a workgroup size against a primitive's accepted sizes and the device's limits.
pub(crate) fn check_workgroup(ctx: &Context, what: &str, workgroup: u32, accepted: &[u32]) -> Result<()> {
    let info = ctx.info();
    if !accepted.contains(&workgroup) {
        return Err(EngineError::InvalidInput(format!("{what}: workgroup size {workgroup} not one of {accepted:?}")));
    }
    if workgroup > info.max_workgroup_invocations || workgroup > info.max_workgroup_size[0] {
        return Err(EngineError::Unsupported(format!(
            "{what}: workgroup size {workgroup} exceeds the device limit {}",
            info.max_workgroup_invocations.min(info.max_workgroup_size[0])
        )));
    }
    if workgroup < info.subgroup_size {
        return Err(EngineError::Unsupported(format!(
            "{what}: workgroup size {workgroup} is below the subgroup size {}",
            info.subgroup_size
        )));
    }
    if !info.has_subgroup_ops(&["basic", "arithmetic", "ballot"]) {
        return Err(EngineError::Unsupported(format!("{what}: needs subgroup arithmetic and ballot operations")));
    }
    Ok(())
}

/// Returns an error unless a buffer of `have` elements can hold `need`.
pub(crate) fn check_len(what: &str, have: usize, need: usize) -> Result<()> {
    if have < need {
        return Err(EngineError::InvalidInput(format!("{what}: buffer holds {have} elements, needs {need}")));
    }
    Ok(())
}

/// Returns an error unless `bytes` fit one storage-buffer binding and `n` fits a u32 index.
pub(crate) fn check_binding(ctx: &Context, what: &str, n: usize, bytes: u64) -> Result<()> {
    let max = ctx.info().max_storage_buffer_range;
    if bytes > max || n > u32::MAX as usize {
        return Err(EngineError::InvalidInput(format!(
            "{what}: {n} elements ({bytes} bytes) exceed one storage binding ({max} bytes) on this device"
        )));
    }
    Ok(())
}

/// Number of tiles and scratch length for `n` elements at a given workgroup size (shared with
/// compaction, which runs the same tile scan).
pub(crate) fn tiles(n: usize, workgroup: u32) -> (usize, usize) {
    let tiles = n.div_ceil(PER_INVOCATION * workgroup as usize);
    (tiles, 2 + 2 * tiles)
}

/// Scan pipelines for one context.
pub struct Scanner {
    ctx: Context,
    pipe: ComputePipeline,
    workgroup: u32,
}

impl Scanner {
    /// Creates the scan pipeline with [`DEFAULT_WORKGROUP`].
    pub fn new(ctx: &Context) -> Result<Scanner> {
        Scanner::with_workgroup(ctx, DEFAULT_WORKGROUP)
    }

    /// Creates the scan pipeline with the given workgroup size (one of [`WORKGROUP_SIZES`]),
    /// for tuning sweeps.
    pub fn with_workgroup(ctx: &Context, workgroup: u32) -> Result<Scanner> {
        check_workgroup(ctx, "scan", workgroup, WORKGROUP_SIZES)?;
        let pipe = ctx.compute_pipeline(&PipelineDesc {
            name: "scan_u32",
            spirv: shaders::SCAN_U32,
            bindings: 3,
            push_bytes: std::mem::size_of::<Push>() as u32,
            spec: &[workgroup],
        })?;
        Ok(Scanner { ctx: ctx.clone(), pipe, workgroup })
    }

    /// The workgroup size this scanner was built with.
    pub fn workgroup(&self) -> u32 {
        self.workgroup
    }

    /// Length in u32 of the scratch buffer a scan of `n` elements needs.
    pub fn scratch_len(&self, n: usize) -> usize {
        tiles(n, self.workgroup).1
    }

    /// A device buffer of [`Scanner::scratch_len`]`(n)` u32.
    pub fn scratch(&self, n: usize) -> Result<Buffer<u32>> {
        self.ctx.buffer(self.scratch_len(n), Location::Device, "scan scratch")
    }

    /// Records `output[i] = input[0] + ... + input[i-1]` (wrapping) for `i < input.len()`;
    /// `scratch[TOTAL_INDEX]` receives the total.
    pub fn record_exclusive(
        &self,
        rec: &mut Recorder,
        input: &Buffer<u32>,
        output: &Buffer<u32>,
        scratch: &Buffer<u32>,
    ) -> Result<()> {
        self.record(rec, input, output, scratch, false)
    }

    /// Records `output[i] = input[0] + ... + input[i]` (wrapping) for `i < input.len()`;
    /// `scratch[TOTAL_INDEX]` receives the total.
    pub fn record_inclusive(
        &self,
        rec: &mut Recorder,
        input: &Buffer<u32>,
        output: &Buffer<u32>,
        scratch: &Buffer<u32>,
    ) -> Result<()> {
        self.record(rec, input, output, scratch, true)
    }

    fn record(
        &self,
        rec: &mut Recorder,
        input: &Buffer<u32>,
        output: &Buffer<u32>,
        scratch: &Buffer<u32>,
        inclusive: bool,
    ) -> Result<()> {
        self.record_prefix(rec, input, input.len(), output, scratch, inclusive)
    }

    /// Records the scan of the first `n` elements of `input` (for callers whose buffers are
    /// sized for a larger problem).
    pub(crate) fn record_prefix(
        &self,
        rec: &mut Recorder,
        input: &Buffer<u32>,
        n: usize,
        output: &Buffer<u32>,
        scratch: &Buffer<u32>,
        inclusive: bool,
    ) -> Result<()> {
        let (num_tiles, scratch_len) = tiles(n, self.workgroup);
        check_len("scan input", input.len(), n)?;
        check_binding(&self.ctx, "scan input", n, 4 * n as u64)?;
        check_len("scan output", output.len(), n)?;
        check_len("scan scratch", scratch.len(), scratch_len)?;
        // The ticket and the tile descriptors start from zero.
        rec.fill(scratch, 0);
        rec.barrier();
        rec.dispatch_linear(
            &self.pipe,
            &[input.slice(0, n), output.slice(0, n), scratch.binding()],
            &Push { n: n as u32, num_tiles: num_tiles as u32, flag: inclusive as u32 },
            num_tiles as u32,
        );
        Ok(())
    }

    fn run(&self, input: &Buffer<u32>, inclusive: bool) -> Result<(Buffer<u32>, u32)> {
        let output = self.ctx.buffer(input.len(), Location::Device, "scan output")?;
        let scratch = self.scratch(input.len())?;
        let mut rec = self.ctx.recorder()?;
        self.record(&mut rec, input, &output, &scratch, inclusive)?;
        rec.submit()?.wait()?;
        let total = self.ctx.download_range(&scratch, TOTAL_INDEX, 1)?[0];
        Ok((output, total))
    }

    /// The exclusive scan of `input` in a new device buffer (records, submits and waits).
    pub fn exclusive(&self, input: &Buffer<u32>) -> Result<Buffer<u32>> {
        Ok(self.run(input, false)?.0)
    }

    /// The inclusive scan of `input` in a new device buffer (records, submits and waits).
    pub fn inclusive(&self, input: &Buffer<u32>) -> Result<Buffer<u32>> {
        Ok(self.run(input, true)?.0)
    }

    /// The exclusive scan of `input` and the total of all its elements.
    pub fn exclusive_with_total(&self, input: &Buffer<u32>) -> Result<(Buffer<u32>, u32)> {
        self.run(input, false)
    }
}

/// CPU reference: exclusive wrapping prefix sums.
pub fn exclusive_cpu(data: &[u32]) -> Vec<u32> {
    let mut acc = 0u32;
    data.iter()
        .map(|&x| {
            let before = acc;
            acc = acc.wrapping_add(x);
            before
        })
        .collect()
}

/// CPU reference: inclusive wrapping prefix sums.
pub fn inclusive_cpu(data: &[u32]) -> Vec<u32> {
    let mut acc = 0u32;
    data.iter()
        .map(|&x| {
            acc = acc.wrapping_add(x);
            acc
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing;
    use rand::{Rng, SeedableRng};

    fn check(scanner: &Scanner, seed: u64) {
        let ctx = testing::context();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        for n in testing::AWKWARD_SIZES {
            // Large values so the sums wrap many times.
            let data: Vec<u32> = (0..n).map(|_| rng.gen_range(1..u32::MAX)).collect();
            let input = ctx.upload(&data, "scan test input").unwrap();
            let (excl, total) = scanner.exclusive_with_total(&input).unwrap();
            assert_eq!(ctx.download(&excl).unwrap(), exclusive_cpu(&data), "exclusive, n = {n}");
            assert_eq!(total, crate::prims::reduce::sum_u32_cpu(&data), "total, n = {n}");
            let incl = scanner.inclusive(&input).unwrap();
            assert_eq!(ctx.download(&incl).unwrap(), inclusive_cpu(&data), "inclusive, n = {n}");
        }
        testing::assert_no_validation_messages();
    }

    #[test]
    fn scan_matches_cpu_at_awkward_sizes() {
        check(&Scanner::new(testing::context()).unwrap(), 2);
    }

    #[test]
    fn scan_matches_cpu_at_smallest_workgroup() {
        check(&Scanner::with_workgroup(testing::context(), WORKGROUP_SIZES[0]).unwrap(), 3);
    }

    #[test]
    fn scan_of_empty_input_has_zero_total() {
        let ctx = testing::context();
        let scanner = Scanner::new(ctx).unwrap();
        let input = ctx.buffer::<u32>(0, Location::Device, "empty").unwrap();
        assert_eq!(scanner.exclusive_with_total(&input).unwrap().1, 0);
    }

    #[test]
    fn scan_rejects_short_output_and_bad_workgroup() {
        let ctx = testing::context();
        let scanner = Scanner::new(ctx).unwrap();
        let input = ctx.upload(&[1u32; 100], "input").unwrap();
        let output = ctx.buffer::<u32>(99, Location::Device, "output").unwrap();
        let scratch = scanner.scratch(100).unwrap();
        let mut rec = ctx.recorder().unwrap();
        assert!(scanner.record_exclusive(&mut rec, &input, &output, &scratch).is_err());
        assert!(Scanner::with_workgroup(ctx, 100).is_err());
    }
}
