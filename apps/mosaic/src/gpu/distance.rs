//! The distance stage on the GPU (Eq. 1, `distance.comp`, or CIEDE2000 per cell,
//! `distance_ciede2000.comp`); [`crate::cpu::distance`] is its f64 twin.

use engine::{Context, Location};
use indicatif::ProgressBar;

use crate::colour::Formula;
use crate::error::{MosaicError, Result};
use crate::features::Features;
use crate::shaders::kernels;

const WORKGROUP: u32 = 256;
/// The most bytes of D on the device at once: D is computed in blocks of rows, each
/// downloaded before the next, so its size is bounded by host memory only.
pub const BLOCK_BYTES: u64 = 64 << 20;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    m: u32,
    n: u32,
    width: u32,
    row0: u32,
}

/// D (m x n, row-major f32) for m patches and n tiles.
pub fn distance_gpu(ctx: &Context, patches: &Features, tiles: &Features) -> Result<Vec<f32>> {
    distance_blocks(ctx, patches, tiles, Formula::Euclidean, BLOCK_BYTES, &ProgressBar::hidden())
}

/// Every (patch, tile) distance by `formula`, in blocks of rows of at most `block_bytes`
/// (and the device's largest storage buffer); `progress` advances by the rows of each block.
pub fn distance_blocks(
    ctx: &Context,
    patches: &Features,
    tiles: &Features,
    formula: Formula,
    block_bytes: u64,
    progress: &ProgressBar,
) -> Result<Vec<f32>> {
    if patches.width() != tiles.width() {
        return Err(MosaicError::InvalidInput("patch and tile features have different cell counts".into()));
    }
    let (m, n) = (patches.len(), tiles.len());
    let row_bytes = n as u64 * 4;
    let block_rows = (block_bytes.min(ctx.info().max_storage_buffer_range) / row_bytes).min(m as u64) as usize;
    if block_rows == 0 || n as u64 * block_rows as u64 > u32::MAX as u64 {
        return Err(MosaicError::InvalidInput(format!("a row of {n} tiles is too long for this device")));
    }
    let kernel = match formula {
        Formula::Euclidean => &kernels::DISTANCE,
        Formula::Ciede2000 => &kernels::DISTANCE_CIEDE2000,
    };
    let pipe = ctx.kernel::<Push>(kernel, &[WORKGROUP])?;
    let p = ctx.upload(&patches.data, "patch features")?;
    let t = ctx.upload(&tiles.data, "tile features")?;
    let d = ctx.buffer::<f32>(n * block_rows, Location::Device, "distance block")?;
    let mut out = Vec::with_capacity(m * n);
    for row0 in (0..m).step_by(block_rows) {
        let rows = block_rows.min(m - row0);
        let entries = rows * n;
        let mut rec = ctx.recorder()?;
        let push = Push { m: rows as u32, n: n as u32, width: patches.width() as u32, row0: row0 as u32 };
        let groups = (entries as u32).div_ceil(WORKGROUP);
        rec.pass(&pipe).read(&p).read(&t).write(&d).push(&push).dispatch_linear(groups)?;
        rec.submit()?.wait()?;
        out.extend(ctx.download_range(&d, 0, entries)?);
        progress.inc(rows as u64);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::colour::Metric;
    use crate::cpu::distance::{distance_cpu, distance_cpu_with};
    use engine::testing;

    #[test]
    fn matches_cpu_reference_at_awkward_sizes() {
        let ctx = testing::context();
        for (m, n, cells) in [(1, 1, (1, 1)), (7, 300, (4, 4)), (33, 257, (3, 2))] {
            let (patches, tiles) = crate::synth::problem(crate::synth::grid_for(m), n, cells, 3);
            let got = distance_gpu(ctx, &patches, &tiles).unwrap();
            let want = distance_cpu(&patches, &tiles);
            let err = testing::max_rel_error(&got, &want, 1.0);
            assert!(err < 1e-5, "{m}x{n}: relative error {err:e}");
            // Blocks of 3 rows (the last one partial) give the same matrix.
            let blocks =
                distance_blocks(ctx, &patches, &tiles, Formula::Euclidean, 3 * n as u64 * 4, &ProgressBar::hidden())
                    .unwrap();
            assert_eq!(blocks, got, "{m}x{n} in blocks");
        }
        testing::assert_no_validation_messages();
    }

    #[test]
    fn ciede2000_matches_cpu_reference_at_awkward_sizes() {
        let ctx = testing::context();
        for (m, n, cells) in [(1, 1, (1, 1)), (5, 301, (4, 4)), (34, 129, (3, 2))] {
            let (patches, tiles) = crate::synth::problem(crate::synth::grid_for(m), n, cells, 5);
            let (patches, tiles) = (Metric::Ciede2000.features(&patches), Metric::Ciede2000.features(&tiles));
            let got = distance_blocks(ctx, &patches, &tiles, Formula::Ciede2000, BLOCK_BYTES, &ProgressBar::hidden())
                .unwrap();
            let want = distance_cpu_with(&patches, &tiles, Formula::Ciede2000, &ProgressBar::hidden());
            // f32 trigonometry and powers against f64 (2.7e-6 measured on lavapipe): relative
            // 2e-5, floor 1 Delta E unit.
            let err = testing::max_rel_error(&got, &want, 1.0);
            assert!(err < 2e-5, "{m}x{n}: relative error {err:e}");
        }
        testing::assert_no_validation_messages();
    }
}
