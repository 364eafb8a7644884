//! SoftAssign on the GPU: the fused row pass (`sinkhorn_rows.comp`) and the column pass with
//! the outlier row (`sinkhorn_cols.comp`), recorded for a whole temperature schedule.
//! f32 throughout, with Section 5.1's clamp of the exponent to [-70, 70].

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

/// SoftAssign state on the GPU for one distance matrix.
pub struct GpuSoftAssign {
    ctx: Context,
    rows_pipe: ComputePipeline,
    cols_pipe: ComputePipeline,
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
    /// each tile may be used `repeat` times.
    pub fn new(ctx: &Context, d: &DistanceMatrix, params: &SoftAssignParams, repeat: usize) -> Result<GpuSoftAssign> {
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
        let scale = scale_of(d);
        let state = GpuSoftAssign {
            ctx: ctx.clone(),
            rows_pipe,
            cols_pipe,
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

    /// Records one cooling iteration (stabilisations x Sinkhorn iterations) at `t`.
    pub fn record_cooling_iteration(&self, rec: &mut Recorder, t: f64, params: &SoftAssignParams, mark_passes: bool) {
        for _ in 0..params.per_temperature() {
            self.record_sinkhorn(rec, t, mark_passes);
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

    /// One cooling iteration (100 Sinkhorn iterations) on the GPU against the f64 CPU
    /// reference, at shapes that exercise several columns per invocation, several rows per
    /// block with a partial last block, and a single row.
    #[test]
    fn cooling_iteration_matches_cpu_reference() {
        let ctx = testing::context();
        let params = SoftAssignParams { alpha: 0.3, ..Default::default() };
        // (37, 20) with 3 uses per tile: columns scaled to a capacity of 3.
        for (m, n, repeat) in [(1, 3, 1), (37, 101, 1), (5, 1500, 1), (299, 301, 1), (37, 20, 3)] {
            let d = crate::bench::matrix(m, n, 11);
            let t = params.temperature(0, scale_of(&d));
            let gpu = GpuSoftAssign::new(ctx, &d, &params, repeat).unwrap();
            let mut rec = ctx.recorder().unwrap();
            gpu.record_cooling_iteration(&mut rec, t, &params, false);
            rec.submit().unwrap().wait().unwrap();
            let mut cpu = CpuSoftAssign::new(&d, &params, repeat);
            cpu.cooling_iteration(t, &params);
            let err = testing::max_rel_error(&gpu.matrix(&d, t).unwrap(), &cpu.matrix(t), 1e-6);
            assert!(err < 1e-4, "{m}x{n} x{repeat}: M differs by {err:e} (relative, floor 1e-6)");
            // After normalisation every real row of M sums to ~1.
            let p = gpu.matrix(&d, t).unwrap();
            for i in 0..m {
                let s: f32 = p[i * n..(i + 1) * n].iter().sum();
                assert!((s - 1.0).abs() < 0.05, "{m}x{n}: row {i} sums to {s}");
            }
        }
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
