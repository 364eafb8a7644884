//! The Hungarian method on the GPU ([`crate::hungarian`] has the steps). The host records
//! the start (reductions, zero list, first stars, covers), then ticks: a tick is a few prime
//! passes, the dual update (min, potentials, zero list) and the augmentation (mark, flip,
//! covers), each choosing the next step in a control block on the device (the prime pass in
//! its last workgroup, the others through `hungarian_control.comp`); every kernel returns at
//! once unless the block's mode is its step. So a tick does passes of step 4 until one says
//! otherwise, then a step 6 or a step 5, with no host round trip. The ticks are recorded
//! once, [`TICKS_PER_RUN`] of them with a readback of the control block, as a [`Replay`]
//! that runs again until the block says done.

use engine::{Buffer, Context, Kernel, Location, Recorder, Replay};

use std::time::Instant;

use crate::auction::ExactSolution;
use crate::error::{MosaicError, Result};
use crate::hungarian::{certify, HungarianState, NONE};
use crate::matrix::DistanceMatrix;
use crate::shaders::kernels;

/// Ticks per run of the replay (ticks after the end cost only empty launches; each run costs
/// a submission and a wait).
const TICKS_PER_RUN: u64 = 16;
/// Prime passes per tick. Most passes lead to another pass, not to a dual update or an
/// augmentation, whose eight dispatches cost about 3.5 us each even when they return at once
/// (H200): so a tick runs them after several passes, not after each.
const PASSES_PER_TICK: usize = 4;
/// Ticks after which the solve gives up (a safeguard: the steps end far sooner).
const MAX_TICKS: u64 = 1 << 22;
/// Invocations per workgroup of every kernel but the control's.
const WORKGROUP: u32 = 256;
/// Workgroups of the kernels that stride over rows or over the zero list.
const STRIDING_GROUPS: u32 = 1024;
/// Rows each workgroup of the column reduction folds.
const COLUMN_MIN_ROWS: u32 = 64;
/// First-matching passes over the zero list (step 2).
const STAR_PASSES: usize = 3;
/// Sweeps of its slice a workgroup of the prime pass makes while it primes.
const PRIME_SWEEPS: u32 = 16;

/// Words of the control block (`Control` in hungarian_common.glsl), and the places of those
/// the host reads.
const CONTROL_WORDS: usize = 11;
const WORD_MODE: usize = 0;
const WORD_ZEROS: usize = 5;
const WORD_FAULT: usize = 6;
const WORD_PASSES: usize = 7;
const WORD_DUAL_UPDATES: usize = 8;
const WORD_AUGMENTATIONS: usize = 9;
const MODE_DONE: u32 = 4;
const MODE_FAULT: u32 = 5;
const FAULT_ZEROS: u32 = 1;
/// The control kernel's points (its push constant; the prime pass makes its own transition).
const AFTER_DUAL: u32 = 1;
const AFTER_COVER: u32 = 2;
/// The compress kernel's modes: the start, and step 6.
const MODE_START: u32 = 0;
const MODE_DUAL: u32 = 2;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Shape {
    m: u32,
    n: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ColumnPush {
    n: u32,
    rows: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct CompressPush {
    m: u32,
    n: u32,
    capacity: u32,
    when: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ListPush {
    n: u32,
    capacity: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct PrimePush {
    n: u32,
    capacity: u32,
    sweeps: u32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ControlPush {
    m: u32,
    point: u32,
}

/// Why the GPU solve stopped without an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// More zeros than the list holds (a matrix of many ties): the auction solves it.
    Zeros,
    /// A step found the state inconsistent (a bug, never seen): the code says which.
    Internal(u32),
    /// The tick safeguard.
    Ticks,
}

/// The pipelines and buffers of one m x n solve.
pub struct GpuHungarian {
    ctx: Context,
    m: usize,
    n: usize,
    /// Invocations per workgroup ([`WORKGROUP`], or less where the device needs).
    wg: u32,
    capacity: u32,
    row_min: Kernel<Shape>,
    col_min: Kernel<ColumnPush>,
    compress: Kernel<CompressPush>,
    star: Kernel<ListPush>,
    cover: Kernel<Shape>,
    control: Kernel<ControlPush>,
    prime: Kernel<PrimePush>,
    min: Kernel<Shape>,
    dual: Kernel<Shape>,
    mark: Kernel<Shape>,
    flip: Kernel<Shape>,
    d: Buffer<i32>,
    u: Buffer<i32>,
    v: Buffer<i32>,
    zeros: Buffer<u32>,
    star_col: Buffer<u32>,
    star_row: Buffer<u32>,
    prime_col: Buffer<u32>,
    green: Buffer<u32>,
    cover_row: Buffer<u32>,
    cover_col: Buffer<u32>,
    ctl: Buffer<u32>,
    ctl_host: Buffer<u32>,
}

/// The zero list's length for an m x n matrix: an eighth of the entries, at least 64 a row.
fn zero_capacity(m: usize, n: usize) -> usize {
    let entries = m * n;
    entries.min((entries / 8).max(64 * m))
}

impl GpuHungarian {
    /// Creates the pipelines and buffers for an m x n problem (m <= n).
    pub fn new(ctx: &Context, m: usize, n: usize) -> Result<GpuHungarian> {
        let entries = (m as u64).saturating_mul(n as u64);
        if m == 0 || m > n || entries > u32::MAX as u64 {
            return Err(MosaicError::InvalidInput(format!(
                "a {m} x {n} Hungarian solve needs 1 <= m <= n and at most 2^32 - 1 entries (32-bit indices)"
            )));
        }
        let capacity = zero_capacity(m, n);
        ctx.check_binding(entries * 4, &format!("a {m} x {n} Hungarian solve's costs"))?;
        ctx.check_binding(capacity as u64 * 4, &format!("a {m} x {n} Hungarian solve's zero list"))?;
        let info = ctx.info();
        let wg = WORKGROUP.min(info.max_workgroup_invocations).min(64 * info.subgroup_size.max(1));
        let device = |len: usize, what: &str| ctx.buffer::<u32>(len, Location::Device, what);
        Ok(GpuHungarian {
            ctx: ctx.clone(),
            m,
            n,
            wg,
            capacity: capacity as u32,
            row_min: ctx.kernel(&kernels::HUNGARIAN_ROW_MIN, &[wg])?,
            col_min: ctx.kernel(&kernels::HUNGARIAN_COL_MIN, &[wg])?,
            compress: ctx.kernel(&kernels::HUNGARIAN_COMPRESS, &[wg])?,
            star: ctx.kernel(&kernels::HUNGARIAN_STAR, &[wg])?,
            cover: ctx.kernel(&kernels::HUNGARIAN_COVER, &[wg])?,
            control: ctx.kernel(&kernels::HUNGARIAN_CONTROL, &[])?,
            prime: ctx.kernel(&kernels::HUNGARIAN_PRIME, &[wg])?,
            min: ctx.kernel(&kernels::HUNGARIAN_MIN, &[wg])?,
            dual: ctx.kernel(&kernels::HUNGARIAN_DUAL, &[wg])?,
            mark: ctx.kernel(&kernels::HUNGARIAN_AUGMENT_MARK, &[wg])?,
            flip: ctx.kernel(&kernels::HUNGARIAN_AUGMENT_FLIP, &[wg])?,
            d: ctx.buffer(m * n, Location::Device, "Hungarian costs")?,
            u: ctx.buffer(m, Location::Device, "Hungarian row potentials")?,
            v: ctx.buffer(n, Location::Device, "Hungarian column potentials")?,
            zeros: device(capacity, "Hungarian zero list")?,
            star_col: device(m, "Hungarian star column of each row")?,
            star_row: device(n, "Hungarian star row of each column")?,
            prime_col: device(m, "Hungarian prime of each row")?,
            green: device(n, "Hungarian path marks")?,
            cover_row: device(m, "Hungarian row covers")?,
            cover_col: device(n, "Hungarian column covers")?,
            ctl: device(CONTROL_WORDS, "Hungarian control block")?,
            ctl_host: ctx.buffer(CONTROL_WORDS, Location::Download, "Hungarian control block (host)")?,
        })
    }

    /// Workgroups of the kernels with one invocation per row or column.
    fn per_index(&self) -> u32 {
        (self.n as u32).div_ceil(self.wg)
    }

    fn striding(&self) -> u32 {
        STRIDING_GROUPS.min(self.m as u32)
    }

    fn shape(&self) -> Shape {
        Shape { m: self.m as u32, n: self.n as u32 }
    }

    fn record_control(&self, rec: &mut Recorder, point: u32) -> Result<()> {
        rec.pass(&self.control)
            .read_write(&self.ctl)
            .push(&ControlPush { m: self.m as u32, point })
            .dispatch_linear(1)?;
        rec.mark("control");
        Ok(())
    }

    fn record_compress(&self, rec: &mut Recorder, when: u32) -> Result<()> {
        rec.pass(&self.compress)
            .read_write(&self.ctl)
            .read(&self.d)
            .read(&self.u)
            .read(&self.v)
            .write(&self.zeros)
            .push(&CompressPush { m: self.m as u32, n: self.n as u32, capacity: self.capacity, when })
            .dispatch_linear(self.striding())?;
        Ok(())
    }

    fn record_cover(&self, rec: &mut Recorder) -> Result<()> {
        rec.pass(&self.cover)
            .read_write(&self.ctl)
            .read(&self.star_row)
            .write(&self.cover_row)
            .write(&self.cover_col)
            .write(&self.prime_col)
            .write(&self.green)
            .push(&self.shape())
            .dispatch_linear(self.per_index())?;
        rec.mark("cover");
        self.record_control(rec, AFTER_COVER)
    }

    /// Records the start: reductions, the zero list, the first stars, the covers.
    fn record_start(&self, rec: &mut Recorder) -> Result<()> {
        let Shape { m, n } = self.shape();
        rec.fill(&self.ctl, 0);
        rec.fill(&self.star_col, NONE);
        rec.fill(&self.star_row, NONE);
        rec.pass(&self.row_min).read(&self.d).write(&self.u).push(&self.shape()).dispatch_linear(m)?;
        if m == n {
            rec.fill(&self.v, i32::MAX as u32);
            rec.pass(&self.col_min)
                .read(&self.d)
                .read(&self.u)
                .read_write(&self.v)
                .push(&ColumnPush { n, rows: COLUMN_MIN_ROWS })
                .dispatch([self.per_index(), n.div_ceil(COLUMN_MIN_ROWS), 1])?;
        } else {
            rec.fill(&self.v, 0);
        }
        self.record_compress(rec, MODE_START)?;
        for _ in 0..STAR_PASSES {
            rec.pass(&self.star)
                .read_write(&self.ctl)
                .read(&self.zeros)
                .read_write(&self.star_col)
                .read_write(&self.star_row)
                .push(&ListPush { n, capacity: self.capacity })
                .dispatch_linear(self.striding())?;
        }
        self.record_cover(rec)
    }

    /// A tick: [`PASSES_PER_TICK`] prime passes (those after the one that chose a dual update
    /// or an augmentation return at once), then the dual update and the augmentation, each
    /// of which runs only in its mode.
    fn record_tick(&self, rec: &mut Recorder) -> Result<()> {
        let n = self.n as u32;
        for _ in 0..PASSES_PER_TICK {
            rec.pass(&self.prime)
                .read_write(&self.ctl)
                .read(&self.zeros)
                .read(&self.star_col)
                .read_write(&self.prime_col)
                .read_write(&self.cover_row)
                .read_write(&self.cover_col)
                .push(&PrimePush { n, capacity: self.capacity, sweeps: PRIME_SWEEPS })
                .dispatch_linear(self.striding())?;
            rec.mark("prime");
        }
        rec.pass(&self.min)
            .read_write(&self.ctl)
            .read(&self.d)
            .read(&self.u)
            .read(&self.v)
            .read(&self.cover_row)
            .read(&self.cover_col)
            .push(&self.shape())
            .dispatch_linear(self.striding())?;
        rec.mark("min");
        rec.pass(&self.dual)
            .read_write(&self.ctl)
            .read_write(&self.u)
            .read_write(&self.v)
            .read(&self.cover_row)
            .read(&self.cover_col)
            .push(&self.shape())
            .dispatch_linear(self.per_index())?;
        rec.mark("dual");
        self.record_compress(rec, MODE_DUAL)?;
        rec.mark("compress");
        self.record_control(rec, AFTER_DUAL)?;
        rec.pass(&self.mark)
            .read_write(&self.ctl)
            .read(&self.star_col)
            .read(&self.star_row)
            .read(&self.prime_col)
            .write(&self.green)
            .push(&self.shape())
            .dispatch_linear(self.per_index())?;
        rec.mark("mark");
        rec.pass(&self.flip)
            .read_write(&self.ctl)
            .read_write(&self.star_col)
            .read_write(&self.star_row)
            .read(&self.green)
            .push(&self.shape())
            .dispatch_linear(self.per_index())?;
        rec.mark("flip");
        self.record_cover(rec)
    }

    /// Records the control block's readback.
    fn record_readback(&self, rec: &mut Recorder) {
        rec.copy(&self.ctl, &self.ctl_host);
        rec.host_read(&self.ctl_host);
    }

    /// The control block as the last readback left it.
    fn control_words(&self) -> Result<[u32; CONTROL_WORDS]> {
        let mut words = [0; CONTROL_WORDS];
        words.copy_from_slice(self.ctl_host.mapped()?);
        Ok(words)
    }

    /// Reads the control block back after what `rec` recorded; returns it.
    fn submit_and_read(&self, mut rec: Recorder) -> Result<[u32; CONTROL_WORDS]> {
        self.record_readback(&mut rec);
        rec.submit()?.wait()?;
        self.control_words()
    }

    /// [`TICKS_PER_RUN`] ticks and the readback, recorded once.
    fn ticks(&self) -> Result<Replay> {
        let mut rec = self.ctx.replay_recorder()?;
        for _ in 0..TICKS_PER_RUN {
            self.record_tick(&mut rec)?;
        }
        self.record_readback(&mut rec);
        Ok(rec.finish()?)
    }

    /// The start alone on the costs uploaded last, for the stage tests: (u, v, the zero
    /// list in increasing order).
    pub fn start(&self) -> Result<(Vec<i32>, Vec<i32>, Vec<u32>)> {
        let mut rec = self.ctx.recorder()?;
        self.record_start(&mut rec)?;
        let words = self.submit_and_read(rec)?;
        let mut zeros = self.ctx.download(&self.zeros)?;
        zeros.truncate((words[WORD_ZEROS] as usize).min(zeros.len()));
        zeros.sort_unstable();
        Ok((self.ctx.download(&self.u)?, self.ctx.download(&self.v)?, zeros))
    }

    /// Uploads `d` as i32 if its entries are whole numbers of at most `largest` (and below
    /// [`crate::hungarian::LARGEST`]); returns whether they were. Each chunk is checked as it
    /// is converted ([`super::upload`]); one that fails stops the upload.
    pub fn upload_matrix(&self, d: &DistanceMatrix, largest: f64) -> Result<bool> {
        if (d.rows, d.cols) != (self.m, self.n) {
            return Err(MosaicError::InvalidInput(format!(
                "a {} x {} matrix for a {} x {} solve",
                d.rows, d.cols, self.m, self.n
            )));
        }
        let limit = largest.min(crate::hungarian::LARGEST);
        super::upload::upload_rows(&self.ctx, d, &self.d, "Hungarian costs", |from, to| {
            to.iter_mut().zip(from).fold(true, |ok, (t, &x)| {
                *t = x as i32;
                ok & (x <= limit) & (*t as f64 == x)
            })
        })
    }

    fn upload(&self, d: &[i32]) -> Result<()> {
        if d.len() != self.m * self.n {
            return Err(MosaicError::InvalidInput(format!("{} costs for a {} x {} solve", d.len(), self.m, self.n)));
        }
        self.ctx.write(&self.d, 0, d)?;
        Ok(())
    }

    /// Solves `d` (m x n, row-major, whole numbers): the stars and potentials, or why not.
    pub fn solve(&self, d: &[i32]) -> Result<std::result::Result<HungarianState, Fault>> {
        self.upload(d)?;
        self.run()
    }

    /// The GPU time of each kernel over the start and `ticks` ticks on the costs uploaded
    /// last, each pass timed apart (for the benchmarks: where a tick's time goes).
    pub fn profile(&self, ticks: u32) -> Result<Vec<engine::PassTime>> {
        let marks = ticks * (PASSES_PER_TICK as u32 + 8);
        let mut rec = self.ctx.recorder()?;
        self.record_start(&mut rec)?;
        rec.submit()?.wait()?;
        let mut rec = self.ctx.recorder()?;
        rec.enable_profiling(marks)?;
        for _ in 0..ticks {
            self.record_tick(&mut rec)?;
        }
        Ok(engine::profile::total_by_name(&rec.submit()?.wait_profiled()?))
    }

    /// Solves the costs uploaded last.
    fn run(&self) -> Result<std::result::Result<HungarianState, Fault>> {
        self.run_observed(|_| {})
    }

    /// [`GpuHungarian::run`], calling `step` after each of its steps: "recorded" (the ticks'
    /// replay), "start", then "run" after each run of the replay (for the diagnostics of
    /// where the solve's wall time goes).
    pub fn run_observed(&self, mut step: impl FnMut(&str)) -> Result<std::result::Result<HungarianState, Fault>> {
        let ticks = self.ticks()?;
        step("recorded");
        let mut rec = self.ctx.recorder()?;
        self.record_start(&mut rec)?;
        let mut words = self.submit_and_read(rec)?;
        step("start");
        let mut run = 0;
        while words[WORD_MODE] != MODE_DONE && words[WORD_MODE] != MODE_FAULT {
            if run * TICKS_PER_RUN >= MAX_TICKS {
                return Ok(Err(Fault::Ticks));
            }
            ticks.run()?;
            words = self.control_words()?;
            step("run");
            run += 1;
        }
        if words[WORD_MODE] == MODE_FAULT {
            let fault = words[WORD_FAULT];
            return Ok(Err(if fault == FAULT_ZEROS { Fault::Zeros } else { Fault::Internal(fault) }));
        }
        Ok(Ok(HungarianState {
            col4row: self.ctx.download(&self.star_col)?,
            u: self.ctx.download(&self.u)?,
            v: self.ctx.download(&self.v)?,
            passes: words[WORD_PASSES] as u64,
            dual_updates: words[WORD_DUAL_UPDATES] as u64,
            augmentations: words[WORD_AUGMENTATIONS] as u64,
        }))
    }
}

/// Whether every entry of 64 rows spread over `d` is a whole number of at most `limit`: a
/// cheap look before the buffers are made (the upload checks every entry).
fn plausible(d: &DistanceMatrix, limit: f64) -> bool {
    let step = (d.rows / 64).max(1);
    (0..d.rows).step_by(step).all(|i| d.row(i).iter().all(|&x| x <= limit && x.fract() == 0.0))
}

/// Solves `d` (m <= n) on the GPU and certifies the result if its entries are whole numbers
/// of at most `largest`; `None` if they are not, or when the machine stopped without an
/// answer (a zero list too long for its buffer; the tests check that nothing else stops
/// it): the caller runs the auction instead.
pub fn solve(ctx: &Context, d: &DistanceMatrix, largest: f64) -> Result<Option<ExactSolution>> {
    if d.rows > d.cols || !plausible(d, largest.min(crate::hungarian::LARGEST)) {
        return Ok(None);
    }
    let start = Instant::now();
    let solver = GpuHungarian::new(ctx, d.rows, d.cols)?;
    if !solver.upload_matrix(d, largest)? {
        return Ok(None);
    }
    let upload_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    match solver.run()? {
        Ok(state) => certify(d, &state, upload_ms, start.elapsed().as_secs_f64() * 1e3).map(Some),
        Err(_) => Ok(None),
    }
}
