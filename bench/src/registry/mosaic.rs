//! Photomosaic kernels on a deterministic square problem of `size` patches and `size` tiles:
//! the Sinkhorn row and column passes of SoftAssign (`mosaic::gpu::softassign`), checked
//! against the f64 CPU iteration; the one-dispatch-per-iteration kernel with float-atomic
//! column sums, a whole cooling iteration checked against the CPU's; and the feature
//! distance matrix, checked against `mosaic::cpu::distance::distance_cpu`.

use engine::{Context, Location, Result};
use mosaic::cpu::softassign::CpuSoftAssign;
use mosaic::features::Features;
use mosaic::gpu::softassign::atomic::AtomicShape;
use mosaic::gpu::softassign::{GpuSoftAssign, Kernel as SoftAssignKernel};
use mosaic::matrix::DistanceMatrix;
use mosaic::softassign::SoftAssignParams;

use super::{
    fits_workgroup, time, time_pass, unit_floats, Check, Config, Floor, Kernel, Measured, Param, Reps, Shader, Sizes,
};

/// The atomic kernel's registry name: the app reads its tuned shape under it.
pub use mosaic::gpu::softassign::atomic::TUNING_KERNEL as SINKHORN_ATOMIC;

/// The square problems (as many patches as tiles) the Sinkhorn passes and the distances
/// run at.
const SQUARE: Sizes = Sizes { unit: "patches = tiles", default: &[1024, 4096, 8192], tiny: [48, 100], max: 1 << 15 };

/// Colour cells per region (the app's default grid is 4 x 4, 48 values).
const CELLS: (usize, usize) = (4, 4);

fn features(count: usize, seed: u32) -> Features {
    let mut f = Features::new(CELLS);
    f.data = unit_floats(count * 3 * CELLS.0 * CELLS.1, seed).iter().map(|v| v * 255.0).collect();
    f
}

/// The deterministic `size x size` distances both Sinkhorn entries run on.
fn distances(size: u64) -> Result<DistanceMatrix> {
    let n = size as usize;
    let d: Vec<f64> = unit_floats(n * n, 11).iter().map(|&v| f64::from(v) * 100.0).collect();
    DistanceMatrix::new(n, n, d).map_err(to_engine)
}

to_engine_for!(mosaic::MosaicError, InvalidInput);

/// A pass of one Sinkhorn iteration.
pub enum Sinkhorn {
    Rows,
    Cols,
}

impl Kernel for Sinkhorn {
    fn params(&self) -> Vec<Param> {
        Vec::new()
    }
    fn sizes(&self) -> Sizes {
        SQUARE
    }
    fn footprint(&self, size: u64) -> u64 {
        // D in f64 and f32 on the host, f32 on the device, and the partial sums.
        size * size * (8 + 4 + 4 + 4) + (1 << 20)
    }
    fn has_shader(&self) -> bool {
        // The row pass's workgroup is planned inside `GpuSoftAssign::new` (see the report).
        matches!(self, Sinkhorn::Cols)
    }
    fn run(&self, ctx: &Context, _config: &Config, size: u64, reps: Reps) -> Result<Measured> {
        let n = size as usize;
        let d = distances(size)?;
        let params = SoftAssignParams::default();
        // The passes kernel by name: `new` picks another kernel where one fits.
        let gpu = GpuSoftAssign::with_kernel(ctx, &d, &params, 1, SoftAssignKernel::Passes).map_err(to_engine)?;
        let t = params.temperature(0, gpu.scale());
        let mut rec = ctx.recorder()?;
        gpu.record_sinkhorn(&mut rec, t, false).map_err(to_engine)?;
        rec.submit()?.wait()?;
        let got = gpu.potentials().map_err(to_engine)?;
        let mut cpu = CpuSoftAssign::new(&d, &params, 1);
        cpu.sinkhorn(t);
        // f32 potentials after one iteration, in units of the temperature.
        let tolerance = 1e-3 * t;
        let check = Check::close(
            got.f.iter().chain(&got.g).copied(),
            cpu.potentials.f.iter().chain(&cpu.potentials.g).copied(),
            tolerance,
        );
        let pass = match self {
            Sinkhorn::Rows => "rows",
            Sinkhorn::Cols => "columns",
        };
        let times_ms = time_pass(ctx, reps, pass, |rec| gpu.record_sinkhorn(rec, t, true).map_err(to_engine))?;
        let blocks = n.div_ceil(n.div_ceil(128)) as u64;
        let (floor, shader) = match self {
            // D read once, the column partial sums written once.
            Sinkhorn::Rows => (Floor::Bytes(4 * (size * size + blocks * size)), None),
            // `sinkhorn_cols` as `GpuSoftAssign::new` builds it: 1024 (capped by the device) in
            // slices of 32 columns.
            Sinkhorn::Cols => {
                let wg = 1024.min(ctx.info().max_workgroup_invocations) / 32 * 32;
                let shader = Shader { spirv: mosaic::shaders::SINKHORN_COLS, spec: vec![wg, 32] };
                (Floor::Bytes(4 * blocks * size), Some(shader))
            }
        };
        Ok(Measured { times_ms, floor, check, shader })
    }
}

/// A whole cooling iteration of the atomic kernel (`sinkhorn_atomic.comp`: one dispatch per
/// Sinkhorn iteration, column sums added atomically, then `sinkhorn_atomic_finish`), in the
/// shape the grid gives; needs `VK_EXT_shader_atomic_float` (lavapipe and NVIDIA have it).
pub struct AtomicSinkhorn;

impl Kernel for AtomicSinkhorn {
    fn params(&self) -> Vec<Param> {
        vec![
            Param::new(
                "workgroup",
                &[128, 256, 512, 1024],
                1024,
                "invocations per workgroup (specialization constant 0)",
            ),
            Param::new(
                "rows_per_step",
                &[1, 2, 3, 4],
                1,
                "rows reduced per workgroup barrier (specialization constant 2)",
            ),
            Param::new("vec4", &[0, 1], 1, "16-byte loads of D (specialization constant 3)"),
            Param::new("blocks", &[64, 128, 132, 256], 128, "row blocks, one workgroup each (the grid)"),
            Param::new(
                "scaled",
                &[0, 1],
                1,
                "Sinkhorn iterations 2..S on K in f16 (needs vec4; specialization constant 5)",
            ),
        ]
    }
    fn sizes(&self) -> Sizes {
        Sizes { default: &[1024, 2048, 4096], tiny: [48, 260], ..SQUARE }
    }
    fn footprint(&self, size: u64) -> u64 {
        // D in f64 and f32 on the host, f32 on the device, and the CPU twin's matrix.
        size * size * (8 + 4 + 4 + 8) + (1 << 20)
    }
    fn run(&self, ctx: &Context, config: &Config, size: u64, reps: Reps) -> Result<Measured> {
        let n = size as usize;
        let d = distances(size)?;
        let params = SoftAssignParams::default();
        let shape = AtomicShape {
            workgroup: config.get("workgroup"),
            rows_per_step: config.get("rows_per_step"),
            vec4: config.get("vec4") != 0,
            blocks: config.get("blocks").min(size as u32),
            scaled: config.get("scaled") != 0,
        };
        let gpu = GpuSoftAssign::with_atomic_shape(ctx, &d, &params, 1, shape).map_err(to_engine)?;
        let t = params.temperature(0, gpu.scale());
        let mut rec = ctx.recorder()?;
        gpu.record_cooling_iteration(&mut rec, t, &params, false).map_err(to_engine)?;
        rec.submit()?.wait()?;
        let got = gpu.matrix(&d, t).map_err(to_engine)?;
        let mut cpu = CpuSoftAssign::new(&d, &params, 1);
        cpu.cooling_iteration(t, &params);
        // M's entries are at most 1; the order of the atomic additions moves them by about
        // 1e-6 relative (mosaic's tests bound it by 2e-5), K's f16 by up to SCALED_BOUND.
        let bound = if shape.scaled { mosaic::gpu::softassign::SCALED_BOUND } else { 1e-5 };
        let check = Check::close(got.iter().map(|&v| f64::from(v)), cpu.matrix(t), bound);
        let times_ms = time(ctx, reps, |rec| gpu.record_cooling_iteration(rec, t, &params, false).map_err(to_engine))?;
        // D read once per Sinkhorn iteration; scaled, D read and K written in the first, K
        // read in each other (the statistics are then those of `sinkhorn_scaled`).
        let iterations = u64::from(params.per_temperature());
        let (floor, shader) = if shape.scaled {
            let bytes = size * size * (6 + 2 * (iterations - 1));
            (bytes, Shader { spirv: mosaic::shaders::SINKHORN_SCALED, spec: shape.scaled_specialization(n).to_vec() })
        } else {
            let spec = shape.specialization(n).to_vec();
            (4 * size * size * iterations, Shader { spirv: mosaic::shaders::SINKHORN_ATOMIC, spec })
        };
        let floor = Floor::Bytes(floor);
        Ok(Measured { times_ms, floor, check, shader: Some(shader) })
    }
}

/// The feature distance matrix, dispatched from mosaic's own shader with its push block
/// replicated here (`distance_gpu` builds, runs and reads back in one call, so it cannot be
/// timed by GPU timestamps alone; see the report for the API that would end the copy).
pub struct Distance;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct DistancePush {
    m: u32,
    n: u32,
    width: u32,
    /// First row of the block (the whole matrix is one block here).
    row0: u32,
}

impl Kernel for Distance {
    fn params(&self) -> Vec<Param> {
        vec![Param::new(
            "workgroup",
            &[64, 128, 256, 512, 1024],
            256,
            "invocations per workgroup (specialization constant 0)",
        )]
    }
    fn sizes(&self) -> Sizes {
        SQUARE
    }
    fn footprint(&self, size: u64) -> u64 {
        // D in f64 (reference) and f32 on the host and the device.
        size * size * (8 + 4 + 4) + (1 << 20)
    }
    fn run(&self, ctx: &Context, config: &Config, size: u64, reps: Reps) -> Result<Measured> {
        let wg = config.get("workgroup");
        fits_workgroup(ctx, wg)?;
        let n = size as usize;
        let (patches, tiles) = (features(n, 1), features(n, 2));
        let pipe = ctx.kernel::<DistancePush>(&mosaic::shaders::kernels::DISTANCE, &[wg])?;
        let p = ctx.upload(&patches.data, "patch features")?;
        let t = ctx.upload(&tiles.data, "tile features")?;
        let d = ctx.buffer::<f32>(n * n, Location::Device, "distance matrix")?;
        let push = DistancePush { m: n as u32, n: n as u32, width: patches.width() as u32, row0: 0 };
        let groups = ((n * n) as u32).div_ceil(wg);
        let times_ms =
            time(ctx, reps, |rec| rec.pass(&pipe).read(&p).read(&t).write(&d).push(&push).dispatch_linear(groups))?;
        let want = mosaic::cpu::distance::distance_cpu(&patches, &tiles);
        // Distances up to sqrt(48) * 255 in f32: 1e-3 absolute is 1e-6 relative.
        let check = Check::close(ctx.download(&d)?.iter().map(|&v| f64::from(v)), want, 1e-3 * 255.0);
        // 48 values per pair: subtract, multiply-add.
        let floor = Floor::Flops(3 * 48 * size * size);
        Ok(Measured {
            times_ms,
            floor,
            check,
            shader: Some(Shader { spirv: mosaic::shaders::DISTANCE, spec: vec![wg] }),
        })
    }
}
