//! The kernels `sweep` knows, by name.

use engine::{Context, Result};

use crate::SweepKernel;

/// Compute-shader copy: the bandwidth ceiling itself.
pub struct Copy;

impl SweepKernel for Copy {
    fn name(&self) -> &'static str {
        "copy"
    }
    fn workgroups(&self) -> Vec<u32> {
        vec![64, 128, 256, 512, 1024]
    }
    fn run(&self, ctx: &Context, workgroup: u32, size: u64) -> Result<(f64, u64)> {
        let bytes = size * 4;
        Ok((engine::ceilings::copy_ms(ctx, bytes, workgroup, 5)?, 2 * bytes))
    }
    fn footprint(&self, size: u64) -> u64 {
        // Source and destination, at least one 16-byte word each.
        8 * size + 32
    }
}

/// A kernel's load step alone: 16 loads of one u32 or one uvec4 in flight per invocation
/// (`engine::ceilings::ReadProbe`); size = u32 words read.
pub struct Read {
    /// Words per load: 1 or 4.
    pub width: usize,
}

impl SweepKernel for Read {
    fn name(&self) -> &'static str {
        if self.width == 4 {
            "read_uvec4"
        } else {
            "read_u32"
        }
    }
    fn workgroups(&self) -> Vec<u32> {
        vec![64, 128, 256, 512, 1024]
    }
    fn run(&self, ctx: &Context, workgroup: u32, size: u64) -> Result<(f64, u64)> {
        let bytes = size * 4;
        Ok((engine::ceilings::read_ms(ctx, bytes, workgroup, self.width, 5)?, bytes))
    }
    fn footprint(&self, size: u64) -> u64 {
        // The source (at least 4 words) and one output word per invocation: at most one per
        // 16 loads, plus a partial workgroup.
        4 * size.max(4) + 4 * (size / 16 + 1024)
    }
}

/// Best-of-`repeats` GPU ms of `body` (a short warm-up: sweeps run many points back to back).
fn best_ms(ctx: &Context, repeats: u32, body: impl FnMut(&mut engine::Recorder) -> Result<()>) -> Result<f64> {
    let times = crate::time_repetitions(ctx, repeats, std::time::Duration::from_millis(20), body)?;
    Ok(times.into_iter().fold(f64::INFINITY, f64::min))
}

fn pattern(n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) | 1).collect()
}

/// Exclusive scan of u32 (decoupled look-back).
pub struct Scan;

impl SweepKernel for Scan {
    fn name(&self) -> &'static str {
        "scan"
    }
    fn workgroups(&self) -> Vec<u32> {
        engine::prims::scan::WORKGROUP_SIZES.to_vec()
    }
    fn run(&self, ctx: &Context, workgroup: u32, size: u64) -> Result<(f64, u64)> {
        let n = size as usize;
        let scanner = engine::prims::scan::Scanner::with_workgroup(ctx, workgroup)?;
        let input = ctx.upload(&pattern(n), "scan input")?;
        let output = ctx.buffer::<u32>(n, engine::Location::Device, "scan output")?;
        let scratch = scanner.scratch(n)?;
        let ms = best_ms(ctx, 5, |rec| scanner.record_exclusive(rec, &input, &output, &scratch))?;
        Ok((ms, 8 * size))
    }
    fn footprint(&self, size: u64) -> u64 {
        // Host pattern, input, output, and a scratch shorter than the input.
        16 * size + 1024
    }
}

/// Radix sort of u32 key / u32 value pairs.
pub struct Sort;

impl SweepKernel for Sort {
    fn name(&self) -> &'static str {
        "sort"
    }
    fn workgroups(&self) -> Vec<u32> {
        engine::prims::sort::WORKGROUP_SIZES.to_vec()
    }
    fn run(&self, ctx: &Context, workgroup: u32, size: u64) -> Result<(f64, u64)> {
        let n = size as usize;
        let sorter = engine::prims::sort::Sorter::with_workgroup(ctx, workgroup)?;
        let keys = ctx.upload(&pattern(n), "sort keys")?;
        let values = ctx.upload(&pattern(n), "sort values")?;
        let scratch = sorter.scratch::<u32>(n)?;
        let ms = best_ms(ctx, 3, |rec| sorter.record_sort_pairs(rec, &keys, &values, &scratch))?;
        Ok((ms, 16 * size))
    }
    fn footprint(&self, size: u64) -> u64 {
        // Host keys and values, device keys and values, their ping-pong copies, and the
        // per-block histograms and offsets (256 words per block of at least 512 keys).
        32 * size + (1 << 20)
    }
}

/// Row sums of a row-major f32 matrix with 1024 columns (size = elements).
pub struct RowSums;

impl SweepKernel for RowSums {
    fn name(&self) -> &'static str {
        "row_sums"
    }
    fn workgroups(&self) -> Vec<u32> {
        engine::prims::reduce::WORKGROUP_SIZES.to_vec()
    }
    fn run(&self, ctx: &Context, workgroup: u32, size: u64) -> Result<(f64, u64)> {
        let n = 1024;
        let m = (size as usize / n).max(1);
        let reducer = engine::prims::reduce::Reducer::with_workgroup(ctx, workgroup)?;
        let matrix = ctx.upload(&vec![1.0f32; m * n], "matrix")?;
        let out = ctx.buffer::<f32>(m, engine::Location::Device, "row sums")?;
        let ms = best_ms(ctx, 5, |rec| reducer.record_row_sums(rec, &matrix, m, n, &out))?;
        Ok((ms, 4 * (m * n) as u64))
    }
    fn footprint(&self, size: u64) -> u64 {
        // Host and device matrix (at least one row of 1024) and the row sums.
        9 * size.max(1024)
    }
}

/// Every kernel `sweep` can run.
pub fn all() -> Vec<Box<dyn SweepKernel>> {
    vec![
        Box::new(Copy),
        Box::new(Read { width: 1 }),
        Box::new(Read { width: 4 }),
        Box::new(Scan),
        Box::new(Sort),
        Box::new(RowSums),
    ]
}

/// The names of every kernel, for `--kernel`'s accepted values.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|k| k.name()).collect()
}

/// The kernel called `name`.
pub fn by_name(name: &str) -> Option<Box<dyn SweepKernel>> {
    all().into_iter().find(|k| k.name() == name)
}
