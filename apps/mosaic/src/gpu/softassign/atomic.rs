//! The one-dispatch-per-Sinkhorn-iteration kernel for matrices too large for one workgroup
//! (`sinkhorn_atomic.comp`, `sinkhorn_atomic_finish.comp`): row blocks add their column
//! sums into float atomics, and the next dispatch's workgroups each derive the column
//! potentials from the finished sums at their start. A cooling iteration of S Sinkhorn
//! iterations is S + 1 dispatches (the last applies the final column normalisation).
//!
//! Scaled ([`AtomicShape::scaled`], where n % 4 == 0): the first dispatch of a cooling
//! iteration also stores its row-normalised M in f16 as K, and the other S - 1 run
//! `sinkhorn_scaled.comp` on K with row and column scalings (no exp per entry, half the
//! bytes); the finishing dispatch folds the scalings into the potentials. M then carries
//! f16's rounding of K (2^-11 relative per entry at most, averaged over a row's entries in
//! its sum), and the bytes per Sinkhorn iteration are 2 m n.
//!
//! Buffers: g holds two slots of n (slot 0 the potentials, slot 1 the ping-pong copy
//! dispatches pass on) and the column sums three (one being read, one being added into, one
//! being zeroed for the next dispatch). Bytes per Sinkhorn iteration: D once (4 m n); every
//! workgroup reads g and the sums (8 n, from L2); the atomics add 4 n per block into L2.
//!
//! Atomic float additions make the order of each column's block sums vary from run to run,
//! so results differ in the last bits between runs (the tests state the bound).

use engine::{Buffer, Context, DeviceInfo, Kernel, Location, Recorder, Resource};

use crate::error::{MosaicError, Result};
use crate::shaders::kernels;

/// The tuning file's kernel name for [`AtomicShape`]'s keys.
pub const TUNING_KERNEL: &str = "mosaic.sinkhorn_atomic";
/// Row blocks by default: about one workgroup per multiprocessor of a large GPU, as for the
/// passes kernel (an H200 has 132; 128 leaves 4 idle but never needs a second wave on a
/// GPU with 128).
const DEFAULT_BLOCKS: u32 = 128;
/// Entries of D from which scaled iterations are planned (D of 4 MiB): below it a cooling
/// iteration is bound by its dispatches, not by D's bytes or the exponentials, so f16's
/// rounding of K would buy nothing.
const SCALED_MIN_ENTRIES: usize = 1 << 20;
/// Columns each invocation aims to own (registers grow with it).
const COLUMNS_PER_INVOCATION: u32 = 8;
/// Rows per step the kernel accepts (registers grow with it).
const MAX_ROWS_PER_STEP: u32 = 4;
/// Workgroup of the finishing dispatch.
const FINISH_WORKGROUP: u32 = 256;

/// The shape of `sinkhorn_atomic.comp`: specialization constants and the grid. Every field
/// can be set per device by the tuning file (kernel [`TUNING_KERNEL`], keys `workgroup`,
/// `rows_per_step`, `vec4`, `blocks`) and is checked against the device and the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AtomicShape {
    /// Invocations per workgroup (a power of two).
    pub workgroup: u32,
    /// Rows reduced together per workgroup barrier (1..=4).
    pub rows_per_step: u32,
    /// 16-byte loads of D (only where n is a multiple of 4).
    pub vec4: bool,
    /// Row blocks, one workgroup each (at most m).
    pub blocks: u32,
    /// Sinkhorn iterations after a cooling iteration's first run on K in f16 with scalings
    /// (needs `vec4`).
    pub scaled: bool,
}

/// Largest workgroup: 1024 invocations and, for the per-subgroup row sums in shared
/// memory, at most 128 subgroups.
fn max_workgroup(info: &DeviceInfo) -> u32 {
    info.max_workgroup_invocations.min(1024).min(128 * info.subgroup_size.max(1))
}

impl AtomicShape {
    /// The default for an m x n matrix, with the tuning file's values where it has them.
    pub fn planned(info: &DeviceInfo, m: usize, n: usize) -> AtomicShape {
        let max_wg = max_workgroup(info);
        let tuned = |key: &str| kit::tuning::param(info, TUNING_KERNEL, key);
        let workgroup = tuned("workgroup").unwrap_or_else(|| {
            (n as u32).div_ceil(COLUMNS_PER_INVOCATION).next_power_of_two().clamp(64.min(max_wg), max_wg)
        });
        let vec4 = tuned("vec4").is_none_or(|v| v != 0) && n.is_multiple_of(4);
        AtomicShape {
            workgroup,
            rows_per_step: tuned("rows_per_step").unwrap_or(1),
            vec4,
            blocks: tuned("blocks").unwrap_or(DEFAULT_BLOCKS).min(m as u32),
            scaled: vec4 && tuned("scaled").map_or(m * n >= SCALED_MIN_ENTRIES, |v| v != 0),
        }
    }

    /// Refuses a shape the device or the matrix cannot run.
    fn check(&self, info: &DeviceInfo, m: usize, n: usize) -> Result<()> {
        let max_wg = max_workgroup(info);
        let problem = if !self.workgroup.is_power_of_two() || self.workgroup > max_wg {
            Some(format!("workgroup {} is not a power of two up to {max_wg}", self.workgroup))
        } else if !(1..=MAX_ROWS_PER_STEP).contains(&self.rows_per_step) {
            Some(format!("rows_per_step {} is not in 1..={MAX_ROWS_PER_STEP}", self.rows_per_step))
        } else if self.vec4 && !n.is_multiple_of(4) {
            Some(format!("vec4 loads need n divisible by 4 (n = {n})"))
        } else if self.scaled && !self.vec4 {
            Some("scaled iterations need vec4 loads".to_string())
        } else if self.blocks == 0 || self.blocks as usize > m {
            Some(format!("blocks {} is not in 1..={m}", self.blocks))
        } else if self.shared_bytes() > info.max_shared_memory_bytes {
            Some(format!(
                "{} bytes of shared memory exceed the device's {}",
                self.shared_bytes(),
                info.max_shared_memory_bytes
            ))
        } else {
            None
        };
        match problem {
            Some(p) => Err(MosaicError::InvalidInput(format!("sinkhorn_atomic shape: {p}"))),
            None => Ok(()),
        }
    }

    /// Shared memory of the kernel: the double-buffered subgroup sums and the column tile.
    fn shared_bytes(&self) -> u32 {
        2 * self.rows_per_step * 128 * 4 + 16 * self.workgroup
    }

    /// 4-column groups each invocation owns.
    fn groups(&self, n: usize) -> u32 {
        (n as u32).div_ceil(4 * self.workgroup).max(1)
    }

    /// The specialization constants of `sinkhorn_atomic.comp` for n columns (the sweep
    /// reads the driver's statistics of exactly this pipeline).
    pub fn specialization(&self, n: usize) -> [u32; 6] {
        let groups = self.groups(n);
        let full = n as u64 == 4 * u64::from(groups) * u64::from(self.workgroup);
        [self.workgroup, groups, self.rows_per_step, u32::from(self.vec4), u32::from(full), u32::from(self.scaled)]
    }

    /// The specialization constants of `sinkhorn_scaled.comp` for n columns.
    pub fn scaled_specialization(&self, n: usize) -> [u32; 3] {
        let [workgroup, groups, _, _, full, _] = self.specialization(n);
        [workgroup, groups, full]
    }
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SinkhornPush {
    m: u32,
    n: u32,
    blocks: u32,
    t: f32,
    alpha: f32,
    clamp: f32,
    log_capacity: f32,
    /// 1 where the dispatch first applies the previous iteration's column normalisation.
    update: u32,
    g_in: u32,
    g_out: u32,
    sums_read: u32,
    sums_add: u32,
    sums_zero: u32,
    /// 1 where the dispatch walks its rows last to first.
    reverse: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ScaledPush {
    m: u32,
    n: u32,
    blocks: u32,
    t: f32,
    clamp: f32,
    log_capacity: f32,
    sums_read: u32,
    sums_add: u32,
    sums_zero: u32,
    reverse: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct FinishPush {
    m: u32,
    n: u32,
    t: f32,
    clamp: f32,
    log_capacity: f32,
    g_in: u32,
    sums_read: u32,
    /// 1 where scaled iterations ran: f absorbs the row scalings.
    absorb: u32,
}

/// The slots Sinkhorn iteration `s` of a cooling iteration uses. Iteration s runs its rows
/// with g from slot s % 2 (slot 0 for s = 0, the potentials), so it reads the g of
/// iteration s - 1 from slot (s - 1) % 2 and writes its own to slot s % 2; sums rotate
/// through three slots.
fn slots(s: u32) -> (u32, u32, u32, u32, u32, u32) {
    let update = u32::from(s > 0);
    let g_in = if s == 0 { 0 } else { (s - 1) % 2 };
    (update, g_in, s % 2, (s + 2) % 3, s % 3, (s + 1) % 3)
}

/// `sinkhorn_scaled.comp` and its buffers.
struct ScaledKernel {
    pipeline: Kernel<ScaledPush>,
    /// M after a cooling iteration's first Sinkhorn iteration, f16, four entries a word pair.
    k: Buffer<u32>,
    /// Row scalings (m).
    u: Buffer<f32>,
}

/// The kernel's pipelines and column-sum slots for one matrix.
pub struct AtomicKernel {
    shape: AtomicShape,
    sinkhorn: Kernel<SinkhornPush>,
    finish: Kernel<FinishPush>,
    scaled: Option<ScaledKernel>,
    /// Three slots of n column sums, zero between cooling iterations.
    sums: Buffer<f32>,
}

/// The constants every dispatch of one cooling iteration shares.
pub struct Temperature {
    pub t: f32,
    pub alpha: f32,
    pub clamp: f32,
    pub log_capacity: f32,
}

impl AtomicKernel {
    /// Builds the pipelines for an m x n matrix; refuses a device without float atomic
    /// addition in storage buffers or a shape it cannot run.
    pub fn new(ctx: &Context, m: usize, n: usize, shape: AtomicShape) -> Result<AtomicKernel> {
        let info = ctx.info();
        if !info.shader_buffer_float32_atomic_add {
            return Err(MosaicError::InvalidInput(format!(
                "{} has no float atomic addition (VK_EXT_shader_atomic_float)",
                info.name
            )));
        }
        shape.check(info, m, n)?;
        let sinkhorn = ctx.kernel(&kernels::SINKHORN_ATOMIC, &shape.specialization(n))?;
        let finish = ctx.kernel(&kernels::SINKHORN_ATOMIC_FINISH, &[FINISH_WORKGROUP])?;
        let scaled = if shape.scaled {
            ctx.check_binding((m * n * 2) as u64, &format!("a {m} x {n} f16 kernel"))?;
            Some(ScaledKernel {
                pipeline: ctx.kernel(&kernels::SINKHORN_SCALED, &shape.scaled_specialization(n))?,
                k: ctx.buffer(m * n / 2, Location::Device, "f16 Sinkhorn kernel")?,
                u: ctx.buffer(m, Location::Device, "row scalings")?,
            })
        } else {
            None
        };
        let sums = ctx.buffer(3 * n, Location::Device, "column sums")?;
        Ok(AtomicKernel { shape, sinkhorn, finish, scaled, sums })
    }

    /// K as the last cooling iteration's first dispatch stored it (f16 pairs), where scaled
    /// iterations run: the tests check that dispatch on its own.
    #[cfg(test)]
    pub(crate) fn f16_kernel(&self) -> Option<&Buffer<u32>> {
        self.scaled.as_ref().map(|s| &s.k)
    }

    pub fn shape(&self) -> AtomicShape {
        self.shape
    }

    /// Zeroes the column sums (with the potentials, the start of a solve).
    pub fn reset(&self, rec: &mut Recorder) {
        rec.fill(&self.sums, 0);
    }

    /// Records one cooling iteration of `iterations` Sinkhorn iterations on D (m x n), f
    /// (m) and g (2 n); with `mark`, each Sinkhorn dispatch ends in a "sinkhorn" mark and the
    /// last in "finish".
    pub fn record_cooling_iteration(
        &self,
        rec: &mut Recorder,
        (d, f, g): (&Buffer<f32>, &Buffer<f32>, &Buffer<f32>),
        (m, n): (usize, usize),
        iterations: u32,
        temp: &Temperature,
        mark: bool,
    ) -> Result<()> {
        for s in 0..iterations {
            let (update, g_in, g_out, sums_read, sums_add, sums_zero) = slots(s);
            // Alternate directions, so each dispatch starts where the L2 cache is warm.
            let reverse = s % 2;
            if let (Some(scaled), true) = (&self.scaled, s > 0) {
                let push = ScaledPush {
                    m: m as u32,
                    n: n as u32,
                    blocks: self.shape.blocks,
                    t: temp.t,
                    clamp: temp.clamp,
                    log_capacity: temp.log_capacity,
                    sums_read,
                    sums_add,
                    sums_zero,
                    reverse,
                };
                rec.pass(&scaled.pipeline)
                    .read(&scaled.k)
                    .read_write(&scaled.u)
                    .read(g)
                    .read_write(&self.sums)
                    .push(&push)
                    .dispatch_linear(self.shape.blocks)?;
                if mark {
                    rec.mark("sinkhorn");
                }
                continue;
            }
            let push = SinkhornPush {
                m: m as u32,
                n: n as u32,
                blocks: self.shape.blocks,
                t: temp.t,
                alpha: temp.alpha,
                clamp: temp.clamp,
                log_capacity: temp.log_capacity,
                update,
                g_in,
                g_out,
                sums_read,
                sums_add,
                sums_zero,
                reverse,
            };
            // Without scaled iterations K is not written; the column sums stand in for it.
            let k: &dyn Resource = self.scaled.as_ref().map_or(&self.sums, |s| &s.k);
            rec.pass(&self.sinkhorn)
                .read(d)
                .read_write(f)
                .read_write(g)
                .read_write(&self.sums)
                .write(k)
                .push(&push)
                .dispatch_linear(self.shape.blocks)?;
            if mark {
                rec.mark("sinkhorn");
            }
        }
        let last = iterations - 1;
        // After scaled iterations, g slot 0 still holds the g0 that K was built with.
        let absorb = self.scaled.is_some() && iterations > 1;
        let push = FinishPush {
            m: m as u32,
            n: n as u32,
            t: temp.t,
            clamp: temp.clamp,
            log_capacity: temp.log_capacity,
            g_in: if absorb { 0 } else { last % 2 },
            sums_read: last % 3,
            absorb: u32::from(absorb),
        };
        let u: &dyn Resource = self.scaled.as_ref().map_or(f, |s| &s.u);
        let invocations = m.max(n) as u32;
        rec.pass(&self.finish)
            .read_write(g)
            .read_write(&self.sums)
            .read_write(f)
            .read(u)
            .push(&push)
            .dispatch_linear(invocations.div_ceil(FINISH_WORKGROUP))?;
        if mark {
            rec.mark("finish");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{slots, AtomicShape, SCALED_MIN_ENTRIES};
    use engine::testing;

    /// Scaled iterations are planned where D is large and n % 4 == 0, not otherwise.
    #[test]
    fn scaled_iterations_are_planned_for_large_matrices() {
        let info = testing::context().info();
        const { assert!(SCALED_MIN_ENTRIES <= 2048 * 8192) };
        assert!(AtomicShape::planned(info, 2048, 8192).scaled);
        assert!(AtomicShape::planned(info, 900, 8192).scaled);
        assert!(!AtomicShape::planned(info, 2048, 8190).scaled);
        assert!(!AtomicShape::planned(info, 37, 1100).scaled);
    }

    /// Each iteration reads the g and the sums the previous one wrote, and zeroes the slot
    /// the next one adds into, which no neighbour reads or adds into.
    #[test]
    fn slots_chain_iterations() {
        for s in 1..20 {
            let (_, _, prev_g_out, _, prev_add, _) = slots(s - 1);
            let (update, g_in, g_out, read, add, zero) = slots(s);
            let (_, _, _, _, next_add, _) = slots(s + 1);
            assert_eq!(update, 1);
            // (Iteration 0's g_out is slot 0, which it uses without writing.)
            assert_eq!(g_in, prev_g_out);
            assert_ne!(g_in, g_out);
            assert_eq!(read, prev_add);
            assert_eq!(zero, next_add);
            assert!(read != add && add != zero && zero != read);
        }
        assert_eq!(slots(0), (0, 0, 0, 2, 0, 1));
    }
}
