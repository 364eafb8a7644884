//! SoftAssign on the GPU, f32 throughout, with Section 5.1's clamp of the exponent to
//! [-70, 70], recorded for a whole temperature schedule by one of two kernels:
//!
//! - [`Kernel::Passes`], any size: per Sinkhorn iteration, the fused row pass
//!   (`sinkhorn_rows.comp`) and the column pass with the outlier row (`sinkhorn_cols.comp`).
//!   A cooling iteration of S = stabilisations x Sinkhorn iterations (100 by default) is 2 S
//!   dependent dispatches (200). Bytes per Sinkhorn iteration, B row blocks (128 at most):
//!   rows read D (4 m n) and g once per block (4 B n, L2), write f (4 m) and the column
//!   partials (4 B n); columns read the partials (4 B n) and read/write g (8 n). At
//!   2048 x 8192: 64 MiB of D + 12 MiB of partials and g = 76 MiB, the floor being D's
//!   64 MiB. A third dispatch is the least the column normalisation can cost without float
//!   atomics (not enabled by the engine) or a grid-wide barrier (Vulkan does not promise
//!   that workgroups of one dispatch run together): every row block needs every column's
//!   new potential before its first row.
//! - [`Kernel::Workgroup`], when D, f and g fit in one workgroup's shared memory (100 x 100
//!   does within NVIDIA's 48 KiB): one dispatch per cooling iteration
//!   (`sinkhorn_workgroup.comp`) runs all S Sinkhorn iterations with workgroup barriers.
//!   It reads D, f, g once and writes f, g once per cooling iteration; a 100 x 100 cooling
//!   iteration goes from 200 dispatches (about 6 us of launch gap each on an H200, 1.2 ms)
//!   to 1.

use std::collections::VecDeque;

use engine::{Buffer, ComputePipeline, Context, Location, PipelineDesc, Recorder};
use indicatif::ProgressBar;

use super::{capacity, discretise, scale_of, Potentials, SoftAssignParams, CLAMP_F32};
use crate::error::{MosaicError, Result};
use crate::matrix::DistanceMatrix;
use crate::shaders;

/// Row blocks the row pass aims for: about one workgroup per multiprocessor of a large GPU
/// (measured on an H100, 132 SMs: 128 blocks beat 256 and more, whose extra column partial
/// sums cost more in the column pass than the longer row streams per block cost here).
const TARGET_BLOCKS: usize = 128;
/// Columns each invocation of the row pass aims to own (registers per invocation grow
/// with it; more are used only when the workgroup is at the device's maximum).
const COLUMNS_PER_INVOCATION: u32 = 8;
/// Workgroup size of the column pass (at most; capped by the device).
const COLUMN_WORKGROUP: u32 = 1024;
/// Columns per workgroup of the column pass; the workgroup's invocations split the blocks
/// between COLUMN_WORKGROUP / COLUMNS_PER_GROUP slices, so each adds only a few partials.
const COLUMNS_PER_GROUP: u32 = 32;
/// Cooling iterations per submitted command buffer.
const COOLING_PER_SUBMIT: u32 = 25;
/// Command buffers kept queued: recording the next overlaps GPU work, and the progress bar
/// moves as each one finishes instead of jumping at the end.
const IN_FLIGHT: usize = 2;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct RowPush {
    m: u32,
    n: u32,
    rows_per_block: u32,
    t: f32,
    alpha: f32,
    clamp: f32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ColPush {
    n: u32,
    blocks: u32,
    t: f32,
    clamp: f32,
    log_capacity: f32,
}

/// Which kernels run the Sinkhorn iterations (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kernel {
    /// A row pass and a column pass per Sinkhorn iteration: any size.
    Passes,
    /// One workgroup runs a whole cooling iteration with D in shared memory.
    Workgroup,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct WorkgroupPush {
    iterations: u32,
    t: f32,
    alpha: f32,
    clamp: f32,
    log_capacity: f32,
}

/// Workgroup size of the one-workgroup kernel: about 8 entries of D per invocation, at least
/// two full subgroups, at most 1024 invocations.
fn workgroup_kernel_size(ctx: &Context, m: usize, n: usize) -> u32 {
    let info = ctx.info();
    let max = info.max_workgroup_invocations.min(1024);
    let least = (2 * info.subgroup_size.max(1)).min(max);
    ((m * n).div_ceil(8).min(max as usize) as u32).next_power_of_two().clamp(least, max)
}

/// Whether the one-workgroup kernel fits this shape: shared memory holds D (m n), f twice
/// and the inverse row sums (3 m), g (n) and one slice sum per invocation.
pub fn workgroup_kernel_fits(ctx: &Context, m: usize, n: usize) -> bool {
    let words = m
        .checked_mul(n)
        .and_then(|mn| mn.checked_add(3 * m + n))
        .map(|w| w + workgroup_kernel_size(ctx, m, n) as usize);
    words.and_then(|w| w.checked_mul(4)).is_some_and(|bytes| bytes <= ctx.info().max_shared_memory_bytes as usize)
}

/// SoftAssign state on the GPU for one distance matrix.
pub struct GpuSoftAssign {
    ctx: Context,
    rows_pipe: ComputePipeline,
    cols_pipe: ComputePipeline,
    /// The one-workgroup kernel, where it is the one used.
    workgroup_pipe: Option<ComputePipeline>,
    m: usize,
    n: usize,
    rows_per_block: usize,
    blocks: usize,
    scale: f64,
    alpha: f32,
    /// ln of the uses each tile may have (the column marginal).
    log_capacity: f32,
    d: Buffer<f32>,
    f: Buffer<f32>,
    g: Buffer<f32>,
    partials: Buffer<f32>,
}

impl GpuSoftAssign {
    /// Uploads D, allocates the potentials (zero) and creates the pipelines for this shape;
    /// each tile may be used `repeat` times. The one-workgroup kernel runs where it fits.
    pub fn new(ctx: &Context, d: &DistanceMatrix, params: &SoftAssignParams, repeat: usize) -> Result<GpuSoftAssign> {
        let kernel = if workgroup_kernel_fits(ctx, d.rows, d.cols) { Kernel::Workgroup } else { Kernel::Passes };
        GpuSoftAssign::with_kernel(ctx, d, params, repeat, kernel)
    }

    /// As [`GpuSoftAssign::new`] with the kernel chosen (tests run both on one shape);
    /// `Kernel::Workgroup` must fit ([`workgroup_kernel_fits`]).
    pub fn with_kernel(
        ctx: &Context,
        d: &DistanceMatrix,
        params: &SoftAssignParams,
        repeat: usize,
        kernel: Kernel,
    ) -> Result<GpuSoftAssign> {
        let (m, n) = (d.rows, d.cols);
        let info = ctx.info();
        let bytes = (m * n * 4) as u64;
        if bytes > info.max_storage_buffer_range {
            return Err(MosaicError::InvalidInput(format!(
                "a {m} x {n} matrix ({:.0} MiB) exceeds this device's largest storage buffer ({:.0} MiB)",
                bytes as f64 / 1048576.0,
                info.max_storage_buffer_range as f64 / 1048576.0
            )));
        }
        // The row pass keeps per-subgroup sums for at most 128 subgroups.
        let max_wg = info.max_workgroup_invocations.min(1024).min(128 * info.subgroup_size.max(1));
        // Up to COLUMNS_PER_INVOCATION columns per invocation: fewer, busier invocations
        // per workgroup barrier.
        let workgroup = (n as u32).div_ceil(COLUMNS_PER_INVOCATION).next_power_of_two().clamp(64.min(max_wg), max_wg);
        let per_thread = (n as u32).div_ceil(workgroup);
        let rows_per_block = m.div_ceil(TARGET_BLOCKS);
        // The column pass's workgroup: a whole number of COLUMNS_PER_GROUP-wide slices.
        let column_workgroup =
            COLUMN_WORKGROUP.min(info.max_workgroup_invocations) / COLUMNS_PER_GROUP * COLUMNS_PER_GROUP;
        let blocks = m.div_ceil(rows_per_block);
        let rows_pipe = ctx.compute_pipeline(&PipelineDesc {
            name: "sinkhorn_rows",
            spirv: shaders::SINKHORN_ROWS,
            bindings: 4,
            push_bytes: std::mem::size_of::<RowPush>() as u32,
            spec: &[workgroup, per_thread],
        })?;
        let cols_pipe = ctx.compute_pipeline(&PipelineDesc {
            name: "sinkhorn_cols",
            spirv: shaders::SINKHORN_COLS,
            bindings: 2,
            push_bytes: std::mem::size_of::<ColPush>() as u32,
            spec: &[column_workgroup, COLUMNS_PER_GROUP],
        })?;
        let workgroup_pipe = match kernel {
            Kernel::Passes => None,
            Kernel::Workgroup if workgroup_kernel_fits(ctx, m, n) => Some(ctx.compute_pipeline(&PipelineDesc {
                name: "sinkhorn_workgroup",
                spirv: shaders::SINKHORN_WORKGROUP,
                bindings: 3,
                push_bytes: std::mem::size_of::<WorkgroupPush>() as u32,
                spec: &[workgroup_kernel_size(ctx, m, n), m as u32, n as u32],
            })?),
            Kernel::Workgroup => {
                return Err(MosaicError::InvalidInput(format!(
                    "a {m} x {n} matrix does not fit one workgroup's shared memory"
                )))
            }
        };
        let scale = scale_of(d);
        let state = GpuSoftAssign {
            ctx: ctx.clone(),
            rows_pipe,
            cols_pipe,
            workgroup_pipe,
            m,
            n,
            rows_per_block,
            blocks,
            scale,
            alpha: (params.alpha * scale) as f32,
            log_capacity: capacity(d, repeat).ln() as f32,
            d: ctx.upload(&d.to_f32(), "distance matrix")?,
            f: ctx.buffer(m, Location::Device, "row potentials")?,
            g: ctx.buffer(n, Location::Device, "column potentials")?,
            partials: ctx.buffer(blocks * n, Location::Device, "column partial sums")?,
        };
        state.reset()?;
        Ok(state)
    }

    /// Sets f = g = 0 (the start of a solve).
    pub fn reset(&self) -> Result<()> {
        let mut rec = self.ctx.recorder()?;
        rec.fill(&self.f, 0);
        rec.fill(&self.g, 0);
        rec.barrier();
        rec.submit()?.wait()?;
        Ok(())
    }

    /// The mean distance temperatures are relative to.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Records one Sinkhorn iteration at temperature `t`: row pass, column pass; with
    /// `mark_passes`, each pass ends in a profiling mark ("rows", "columns").
    pub fn record_sinkhorn(&self, rec: &mut Recorder, t: f64, mark_passes: bool) {
        let push = RowPush {
            m: self.m as u32,
            n: self.n as u32,
            rows_per_block: self.rows_per_block as u32,
            t: t as f32,
            alpha: self.alpha,
            clamp: CLAMP_F32,
        };
        rec.dispatch_linear(
            &self.rows_pipe,
            &[self.d.binding(), self.f.binding(), self.g.binding(), self.partials.binding()],
            &push,
            self.blocks as u32,
        );
        rec.barrier();
        if mark_passes {
            rec.mark("rows");
        }
        let push = ColPush {
            n: self.n as u32,
            blocks: self.blocks as u32,
            t: t as f32,
            clamp: CLAMP_F32,
            log_capacity: self.log_capacity,
        };
        rec.dispatch_linear(
            &self.cols_pipe,
            &[self.partials.binding(), self.g.binding()],
            &push,
            (self.n as u32).div_ceil(COLUMNS_PER_GROUP),
        );
        rec.barrier();
        if mark_passes {
            rec.mark("columns");
        }
    }

    /// The kernel that runs the Sinkhorn iterations.
    pub fn kernel(&self) -> Kernel {
        if self.workgroup_pipe.is_some() {
            Kernel::Workgroup
        } else {
            Kernel::Passes
        }
    }

    /// Dependent dispatches one cooling iteration records.
    pub fn dispatches_per_cooling_iteration(&self, params: &SoftAssignParams) -> u32 {
        match self.kernel() {
            Kernel::Workgroup => 1,
            Kernel::Passes => 2 * params.per_temperature(),
        }
    }

    /// Records one cooling iteration (stabilisations x Sinkhorn iterations) at `t`; with
    /// `mark_passes`, the passes kernel marks every pass ("rows", "columns") and the
    /// one-workgroup kernel its one dispatch ("workgroup").
    pub fn record_cooling_iteration(&self, rec: &mut Recorder, t: f64, params: &SoftAssignParams, mark_passes: bool) {
        let Some(pipe) = &self.workgroup_pipe else {
            for _ in 0..params.per_temperature() {
                self.record_sinkhorn(rec, t, mark_passes);
            }
            return;
        };
        let push = WorkgroupPush {
            iterations: params.per_temperature(),
            t: t as f32,
            alpha: self.alpha,
            clamp: CLAMP_F32,
            log_capacity: self.log_capacity,
        };
        rec.dispatch_linear(pipe, &[self.d.binding(), self.f.binding(), self.g.binding()], &push, 1);
        rec.barrier();
        if mark_passes {
            rec.mark("workgroup");
        }
    }

    /// Runs the whole temperature schedule from the current state; `progress` advances by
    /// the cooling iterations of each command buffer as it finishes. Command buffers are
    /// submitted as soon as they are recorded, so recording overlaps GPU work; each ends in
    /// a barrier, which orders it before the next submission on the queue.
    pub fn anneal(&self, params: &SoftAssignParams, progress: &ProgressBar) -> Result<()> {
        let mut in_flight = VecDeque::new();
        let mut k = 0;
        while k < params.iterations {
            let mut rec = self.ctx.recorder()?;
            let end = (k + COOLING_PER_SUBMIT).min(params.iterations);
            for level in k..end {
                self.record_cooling_iteration(&mut rec, params.temperature(level, self.scale), params, false);
            }
            in_flight.push_back((rec.submit()?, end - k));
            k = end;
            while in_flight.len() > IN_FLIGHT {
                let (submission, levels) = in_flight.pop_front().expect("more than IN_FLIGHT queued");
                submission.wait()?;
                progress.inc(levels as u64);
            }
        }
        for (submission, levels) in in_flight {
            submission.wait()?;
            progress.inc(levels as u64);
        }
        Ok(())
    }

    /// Downloads the potentials.
    pub fn potentials(&self) -> Result<Potentials> {
        let widen = |v: Vec<f32>| v.into_iter().map(f64::from).collect();
        Ok(Potentials { f: widen(self.ctx.download(&self.f)?), g: widen(self.ctx.download(&self.g)?) })
    }

    /// M[i][j] for the current potentials at temperature `t`, computed on the host from the
    /// downloaded potentials exactly as the kernels do (for tests).
    pub fn matrix(&self, d: &DistanceMatrix, t: f64) -> Result<Vec<f32>> {
        let p = self.potentials()?;
        let (alpha, t) = (self.alpha, t as f32);
        Ok((0..d.rows)
            .flat_map(|i| {
                let p = &p;
                (0..d.cols).map(move |j| {
                    let x = (p.f[i] as f32 + (p.g[j] as f32 + alpha) - d.at(i, j) as f32) / t;
                    x.clamp(-CLAMP_F32, CLAMP_F32).exp()
                })
            })
            .collect())
    }
}

/// Full SoftAssign on the GPU, each tile used at most `repeat` times, discretised on the host.
pub fn solve(
    ctx: &Context,
    d: &DistanceMatrix,
    params: &SoftAssignParams,
    repeat: usize,
    progress: &ProgressBar,
) -> Result<Vec<usize>> {
    let state = GpuSoftAssign::new(ctx, d, params, repeat)?;
    state.anneal(params, progress)?;
    Ok(discretise(d, &state.potentials()?, repeat))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::softassign::cpu::CpuSoftAssign;
    use engine::testing;

    /// One cooling iteration of `kernel` against the f64 CPU reference: M within 1e-4
    /// relative (floor 1e-6), and every real row of M summing to ~1.
    fn check_cooling_iteration(ctx: &Context, m: usize, n: usize, repeat: usize, kernel: Kernel) {
        let params = SoftAssignParams { alpha: 0.3, ..Default::default() };
        let d = crate::bench::matrix(m, n, 11);
        let t = params.temperature(0, scale_of(&d));
        let gpu = GpuSoftAssign::with_kernel(ctx, &d, &params, repeat, kernel).unwrap();
        assert_eq!(gpu.kernel(), kernel);
        let mut rec = ctx.recorder().unwrap();
        gpu.record_cooling_iteration(&mut rec, t, &params, false);
        rec.submit().unwrap().wait().unwrap();
        let mut cpu = CpuSoftAssign::new(&d, &params, repeat);
        cpu.cooling_iteration(t, &params);
        let p = gpu.matrix(&d, t).unwrap();
        let err = testing::max_rel_error(&p, &cpu.matrix(t), 1e-6);
        assert!(err < 1e-4, "{kernel:?} {m}x{n} x{repeat}: M differs by {err:e} (relative, floor 1e-6)");
        for i in 0..m {
            let s: f32 = p[i * n..(i + 1) * n].iter().sum();
            assert!((s - 1.0).abs() < 0.05, "{kernel:?} {m}x{n}: row {i} sums to {s}");
        }
    }

    /// The passes kernel at shapes that exercise several columns per invocation, several
    /// rows per block with a partial last block, and a single row; (37, 20) with 3 uses per
    /// tile scales columns to a capacity of 3.
    #[test]
    fn passes_match_cpu_reference() {
        let ctx = testing::context();
        for (m, n, repeat) in [(1, 3, 1), (37, 101, 1), (5, 1500, 1), (299, 301, 1), (37, 20, 3)] {
            check_cooling_iteration(ctx, m, n, repeat, Kernel::Passes);
        }
        testing::assert_no_validation_messages();
    }

    /// The one-workgroup kernel at awkward shapes: a single row, more columns than
    /// invocations (one slice owning several columns), n not dividing the workgroup (idle
    /// invocations in the column sums), a tall matrix (150 patches on 7 tiles used 25 times each), and repeats. `new` picks it wherever
    /// it fits.
    #[test]
    fn workgroup_kernel_matches_cpu_reference() {
        let ctx = testing::context();
        for (m, n, repeat) in [(1, 3, 1), (3, 1100, 1), (37, 101, 1), (57, 61, 1), (150, 7, 25), (37, 20, 3)] {
            assert!(workgroup_kernel_fits(ctx, m, n), "{m}x{n} fits the smallest shared memory (32 KiB)");
            check_cooling_iteration(ctx, m, n, repeat, Kernel::Workgroup);
        }
        let d = crate::bench::matrix(37, 101, 1);
        let params = SoftAssignParams::default();
        assert_eq!(GpuSoftAssign::new(ctx, &d, &params, 1).unwrap().kernel(), Kernel::Workgroup);
        let d = crate::bench::matrix(299, 301, 1);
        assert_eq!(GpuSoftAssign::new(ctx, &d, &params, 1).unwrap().kernel(), Kernel::Passes);
        assert!(GpuSoftAssign::with_kernel(ctx, &d, &params, 1, Kernel::Workgroup).is_err());
        testing::assert_no_validation_messages();
    }

    #[test]
    fn full_solve_is_valid_and_near_optimal() {
        let ctx = testing::context();
        let d = crate::bench::matrix(24, 40, 5);
        let assignment = solve(ctx, &d, &SoftAssignParams::default(), 1, &ProgressBar::hidden()).unwrap();
        d.check_assignment(&assignment).unwrap();
        let optimum = d.cost(&crate::exact::solve(&d, &ProgressBar::hidden()));
        let ratio = d.cost(&assignment) / optimum;
        assert!(ratio < 1.03, "softassign / exact = {ratio}");
        testing::assert_no_validation_messages();
    }
}
