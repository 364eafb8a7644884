//! Prefix sums of u32 (exclusive and inclusive, wrapping), in one pass over the data.
//!
//! The kernel (`shaders/engine/scan_u32.comp` with `shaders/include/scan_tile.glsl`) is a
//! single-pass scan with decoupled look-back: each workgroup scans a tile of
//! [`ScanConfig::items`] elements per invocation (16 by default) with subgroup scans, publishes its aggregate, and looks back over earlier
//! tiles' descriptors for its prefix. Tiles are handed out by an atomic ticket so a tile
//! waits only for tiles that already started; that keeps it deadlock-free on lavapipe, whose
//! workgroups are not all resident at once. Reads and writes are 16-byte coalesced, so the
//! scan moves each element once in and once out (about 8 bytes per element).
//!
//! The main API records into the caller's [`Recorder`] ([`Scanner::record_exclusive`]) with a
//! scratch buffer of [`Scanner::scratch_len`] u32; after the recording completes,
//! `scratch[TOTAL_INDEX]` holds the sum of all elements. As every `record_*` in
//! [`crate::prims`], it records declared passes: the recorder orders them after the passes
//! that produce their inputs and before those that consume their outputs.
//!
//! The kernel's shape (workgroup size and elements per invocation, its specialization
//! constants 0 and 1) is a [`ScanConfig`]; [`Scanner::new`] uses the built-in default, and
//! [`Scanner::with_config`] takes one from the caller. The engine reads no tuning file: the
//! caller that owns one (the apps and benches, through `kit::tuning`, entry `engine.scan`)
//! builds the config with [`ScanConfig::from_lookup`] and passes it in, so the engine keeps
//! no hidden process-wide state and a test can build any shape it likes.

use crate::commands::Recorder;
use crate::context::Context;
use crate::error::{EngineError, Result};
use crate::kernel::Kernel;
use crate::memory::{Buffer, Location};
use crate::shaders::kernels;

/// Workgroup sizes (specialization constant 0) the scan kernel accepts; the
/// device's limits may rule out the largest.
pub const WORKGROUP_SIZES: &[u32] = &[64, 128, 256, 512, 1024];

/// Workgroup size [`Scanner::new`] uses.
pub const DEFAULT_WORKGROUP: u32 = 256;

/// Index in the scratch buffer that holds the total (the sum of all inputs) once the
/// recording has completed.
pub const TOTAL_INDEX: usize = 1;

/// Elements per invocation (specialization constant 1) the scan kernel accepts: whole uvec4
/// rows, 1 to 8 of them.
pub const ITEMS_PER_INVOCATION: &[u32] = &[4, 8, 12, 16, 24, 32];

/// Elements per invocation [`Scanner::new`] uses.
pub const DEFAULT_ITEMS: u32 = 16;

/// The scan kernel's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanConfig {
    /// Invocations per workgroup, one of [`WORKGROUP_SIZES`].
    pub workgroup: u32,
    /// Elements per invocation, one of [`ITEMS_PER_INVOCATION`].
    pub items: u32,
}

impl Default for ScanConfig {
    fn default() -> ScanConfig {
        ScanConfig { workgroup: DEFAULT_WORKGROUP, items: DEFAULT_ITEMS }
    }
}

impl ScanConfig {
    /// The default with each parameter `lookup` knows (by its sweep key, `workgroup` or
    /// `items`) replaced, for callers that read a tuning file. A value the kernel does not
    /// accept leaves that parameter at its default, so a stale or foreign file can never
    /// stop a scan; [`Scanner::with_config`] still checks the device's limits.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<u32>) -> ScanConfig {
        let d = ScanConfig::default();
        let pick =
            |key: &str, accepted: &[u32], default: u32| lookup(key).filter(|v| accepted.contains(v)).unwrap_or(default);
        ScanConfig {
            workgroup: pick("workgroup", WORKGROUP_SIZES, d.workgroup),
            items: pick("items", ITEMS_PER_INVOCATION, d.items),
        }
    }

    /// Elements per tile (one workgroup's share).
    pub fn tile(&self) -> usize {
        self.workgroup as usize * self.items as usize
    }
}

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
    if n > u32::MAX as usize {
        return Err(EngineError::InvalidInput(format!("{what}: {n} elements exceed a 32-bit index")));
    }
    ctx.check_binding(bytes, what)
}

/// Number of tiles and scratch length for `n` elements in tiles of `tile` elements.
fn tiles_of(n: usize, tile: usize) -> (usize, usize) {
    let tiles = n.div_ceil(tile);
    (tiles, 2 + 2 * tiles)
}

/// Scan pipelines for one context.
pub struct Scanner {
    ctx: Context,
    pipe: Kernel<Push>,
    config: ScanConfig,
}

impl Scanner {
    /// Creates the scan pipeline with the built-in [`ScanConfig::default`].
    pub fn new(ctx: &Context) -> Result<Scanner> {
        Scanner::with_config(ctx, ScanConfig::default())
    }

    /// Creates the scan pipeline with the given workgroup size (one of [`WORKGROUP_SIZES`])
    /// and the default elements per invocation.
    pub fn with_workgroup(ctx: &Context, workgroup: u32) -> Result<Scanner> {
        Scanner::with_config(ctx, ScanConfig { workgroup, ..ScanConfig::default() })
    }

    /// Creates the scan pipeline with the given shape (tuned, or swept).
    pub fn with_config(ctx: &Context, config: ScanConfig) -> Result<Scanner> {
        check_workgroup(ctx, "scan", config.workgroup, WORKGROUP_SIZES)?;
        if !ITEMS_PER_INVOCATION.contains(&config.items) {
            return Err(EngineError::InvalidInput(format!(
                "scan: {} elements per invocation not one of {ITEMS_PER_INVOCATION:?}",
                config.items
            )));
        }
        let spec = [config.workgroup, config.items];
        let pipe = ctx.kernel::<Push>(&kernels::SCAN_U32, &spec)?;
        Ok(Scanner { ctx: ctx.clone(), pipe, config })
    }

    /// The workgroup size this scanner was built with.
    pub fn workgroup(&self) -> u32 {
        self.config.workgroup
    }

    /// The shape this scanner was built with.
    pub fn config(&self) -> ScanConfig {
        self.config
    }

    /// Length in u32 of the scratch buffer a scan of `n` elements needs.
    pub fn scratch_len(&self, n: usize) -> usize {
        tiles_of(n, self.config.tile()).1
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
        self.record_prefix(rec, input, input.len(), output, scratch, false)
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
        let (num_tiles, scratch_len) = tiles_of(n, self.config.tile());
        check_len("scan input", input.len(), n)?;
        check_binding(&self.ctx, "scan input", n, 4 * n as u64)?;
        check_len("scan output", output.len(), n)?;
        check_len("scan scratch", scratch.len(), scratch_len)?;
        // The ticket and the tile descriptors start from zero.
        rec.fill(scratch, 0);
        rec.pass(&self.pipe)
            .read(&input.range(0, n))
            .write(&output.range(0, n))
            .read_write(scratch)
            .push(&Push { n: n as u32, num_tiles: num_tiles as u32, flag: inclusive as u32 })
            .dispatch_linear(num_tiles as u32)
    }

    fn run(&self, input: &Buffer<u32>, inclusive: bool) -> Result<(Buffer<u32>, u32)> {
        let output = self.ctx.buffer(input.len(), Location::Device, "scan output")?;
        let scratch = self.scratch(input.len())?;
        let mut rec = self.ctx.recorder()?;
        self.record_prefix(&mut rec, input, input.len(), &output, &scratch, inclusive)?;
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

    /// Checks the exclusive scan, its total and the inclusive scan at each of `sizes`.
    fn check_sizes(scanner: &Scanner, rng: &mut impl Rng, sizes: impl IntoIterator<Item = usize>) {
        let ctx = testing::context();
        let config = scanner.config();
        for n in sizes {
            // Large values so the sums wrap many times.
            let data: Vec<u32> = (0..n).map(|_| rng.gen_range(1..u32::MAX)).collect();
            let input = ctx.upload(&data, "scan test input").unwrap();
            let (excl, total) = scanner.exclusive_with_total(&input).unwrap();
            assert_eq!(ctx.download(&excl).unwrap(), exclusive_cpu(&data), "exclusive, {config:?}, n = {n}");
            assert_eq!(total, crate::prims::reduce::sum_u32_cpu(&data), "total, {config:?}, n = {n}");
            let incl = scanner.inclusive(&input).unwrap();
            assert_eq!(ctx.download(&incl).unwrap(), inclusive_cpu(&data), "inclusive, {config:?}, n = {n}");
        }
    }

    fn check(scanner: &Scanner, seed: u64) {
        check_sizes(scanner, &mut rand_chacha::ChaCha8Rng::seed_from_u64(seed), testing::AWKWARD_SIZES);
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
    fn scan_matches_cpu_at_every_items_per_invocation() {
        let ctx = testing::context();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        for &items in ITEMS_PER_INVOCATION {
            // A small workgroup keeps the tiles short, so the awkward sizes span many tiles
            // and ragged ends at every row count.
            let config = ScanConfig { workgroup: WORKGROUP_SIZES[0], items };
            let scanner = Scanner::with_config(ctx, config).unwrap();
            let tile = config.tile();
            let edges = [tile - 1, tile, tile + 5, 3 * tile + 4 * 7 + 2];
            check_sizes(&scanner, &mut rng, testing::AWKWARD_SIZES.into_iter().chain(edges));
        }
        testing::assert_no_validation_messages();
    }

    #[test]
    fn scan_config_from_lookup_keeps_defaults_for_unknown_or_refused_values() {
        let tuned = ScanConfig::from_lookup(|key| match key {
            "workgroup" => Some(512),
            "items" => Some(24),
            _ => None,
        });
        assert_eq!(tuned, ScanConfig { workgroup: 512, items: 24 });
        assert_eq!(ScanConfig::from_lookup(|_| None), ScanConfig::default());
        let refused = ScanConfig::from_lookup(|key| Some(if key == "items" { 20 } else { 100 }));
        assert_eq!(refused, ScanConfig::default());
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
        assert!(Scanner::with_config(ctx, ScanConfig { items: 20, ..ScanConfig::default() }).is_err());
    }
}
