//! The distance matrix on the GPU (Eq. 1, `distance.comp`); [`crate::features::distance_cpu`]
//! is its f64 reference.

use engine::{Context, Location, PipelineDesc};

use crate::error::{MosaicError, Result};
use crate::features::Features;
use crate::shaders;

const WORKGROUP: u32 = 256;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Push {
    m: u32,
    n: u32,
    width: u32,
}

/// D (m x n, row-major f32) for m patches and n tiles.
pub fn distance_gpu(ctx: &Context, patches: &Features, tiles: &Features) -> Result<Vec<f32>> {
    if patches.width() != tiles.width() {
        return Err(MosaicError::InvalidInput("patch and tile features have different cell counts".into()));
    }
    let (m, n) = (patches.len(), tiles.len());
    let entries = m * n;
    if entries as u64 * 4 > ctx.info().max_storage_buffer_range || entries > u32::MAX as usize {
        return Err(MosaicError::InvalidInput(format!("a {m} x {n} distance matrix is too large for this device")));
    }
    let pipe = ctx.compute_pipeline(&PipelineDesc {
        name: "distance",
        spirv: shaders::DISTANCE,
        bindings: 3,
        push_bytes: std::mem::size_of::<Push>() as u32,
        spec: &[WORKGROUP],
    })?;
    let p = ctx.upload(&patches.data, "patch features")?;
    let t = ctx.upload(&tiles.data, "tile features")?;
    let d = ctx.buffer::<f32>(entries, Location::Device, "distance matrix")?;
    let mut rec = ctx.recorder()?;
    let push = Push { m: m as u32, n: n as u32, width: patches.width() as u32 };
    rec.dispatch_linear(&pipe, &[p.binding(), t.binding(), d.binding()], &push, (entries as u32).div_ceil(WORKGROUP));
    rec.submit()?.wait()?;
    Ok(ctx.download(&d)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::distance_cpu;
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
        }
        testing::assert_no_validation_messages();
    }
}
