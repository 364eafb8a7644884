//! The auction on the GPU. Two kernels per forward Jacobi round (`auction_bid.comp`: every
//! unassigned row bids, and a 64-bit atomicMax on (bid, ~row) leaves each column its
//! winner; `auction_assign.comp`: winners take their columns, previous owners leave), and
//! two per reverse round (`auction_reverse.comp`: unassigned columns above lambda offer
//! themselves to a row, kept by a 64-bit atomicMin on (value, column), or come down to
//! lambda; `auction_reverse_assign.comp`: rows move to their offers, and the next round's
//! lambda). Late in a reverse stage most rounds have one or a few columns above lambda (a
//! chain of displacements), and late in a forward stage many have a few unassigned rows:
//! `auction_reverse_tail.comp` and `auction_forward_tail.comp` run those rounds, the same
//! rounds, in one workgroup, up to 128 a dispatch, before every pair of Jacobi rounds. A
//! reverse stage starts with `auction_prepare.comp` (lambda and the rows' values); between
//! phases it and `auction_phase.comp` set unassigned columns to lambda and release
//! everything. The reverse scans read D transposed (`auction_transpose.comp`, once per
//! load). A kernel costs a few microseconds even with nothing to do, and the photomosaic
//! matrices take thousands of rounds, so the passes a round are what the solve's time goes
//! to. A stage's rounds are recorded once, a run of them with the readback of one count
//! (unassigned rows, or columns above lambda), as a replay run until the count is 0:
//! recording the same passes for every batch cost the host more than the GPU took to run
//! them.

use engine::{Buffer, Context, Kernel, Location, Recorder, Replay};

use std::time::Instant;

use indicatif::ProgressBar;

use crate::auction::{epsilons_for, repair, scale_of, AuctionState, ExactSolution, NONE};
use crate::error::{MosaicError, Result};
use crate::matrix::DistanceMatrix;
use crate::shaders::kernels;

/// Rounds per run of a stage's replay (rounds after the stage ended cost only empty
/// launches; each run costs a submission and a wait). Even: reverse rounds alternate
/// between two sets of their per-round words, and a run ends on the second.
const ROUNDS_PER_RUN: u64 = 16;
const _: () = assert!(ROUNDS_PER_RUN.is_multiple_of(2));
/// No offer to a row (`row_offer`'s words).
const NO_OFFER: u32 = u32::MAX;
/// Rounds that one dispatch of a tail kernel (`auction_forward_tail.comp`,
/// `auction_reverse_tail.comp`) may run, and the most unassigned rows (columns above lambda)
/// a round it runs may have. On the 2048 x 8192 photo matrix 56% of the forward rounds have
/// at most eight unassigned rows, and 70% of the reverse rounds one column above lambda,
/// 97% at most eight.
const TAIL_ROUNDS: u32 = 128;
const TAIL_LIMIT: u32 = 8;
/// The word of `active` where the tail kernels count their rounds (after the even and odd
/// reverse rounds' counts).
const TAIL_WORD: usize = 2;
/// Largest workgroup of the tail kernel (one workgroup scans all the columns).
const MAX_TAIL_WORKGROUP: u32 = 1024;
/// Rounds after which a stage of a phase stops unfinished (a safeguard: the repair completes whatever
/// assignment the auction reached).
const MAX_ROUNDS_PER_PHASE: u64 = 1 << 20;
/// Invocations per workgroup of the per-row and per-column kernels.
const LINEAR_WORKGROUP: u32 = 64;
/// Largest workgroup of the bidding kernel (the scan of a row is split over it).
const MAX_BID_WORKGROUP: u32 = 256;
/// Most workgroups of the scanning kernels, which stride over their rows or columns: enough
/// to fill a large GPU, where a workgroup for each would cost more to launch than the few
/// rows or columns left late in a phase take to scan.
const MAX_SCAN_GROUPS: usize = 1024;
/// Columns each bidding invocation aims to scan.
const COLUMNS_PER_INVOCATION: u32 = 8;
/// The side of `auction_transpose.comp`'s tiles.
const TILE: u32 = 32;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct BidPush {
    m: u32,
    n: u32,
    eps: f32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ShapePush {
    m: u32,
    n: u32,
}

/// A reverse round's push: the shape, epsilon, and which set of per-round words it uses.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ReversePush {
    m: u32,
    n: u32,
    eps: f32,
    parity: u32,
}

/// The forward tail kernel's push: the shape, epsilon and its limits.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ForwardTailPush {
    m: u32,
    n: u32,
    eps: f32,
    rounds: u32,
    limit: u32,
}

/// The reverse tail kernel's push: the shape, epsilon, the set of words of the Jacobi round
/// after it, and its limits.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct ReverseTailPush {
    m: u32,
    n: u32,
    eps: f32,
    parity: u32,
    rounds: u32,
    limit: u32,
}

/// The last pass of a reverse round: the shape and the round's set of words.
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct SettlePush {
    m: u32,
    n: u32,
    parity: u32,
}

/// What a stage of rounds did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage {
    /// Rounds run: whole runs of the Jacobi replay, and the tail kernel's rounds.
    pub rounds: u64,
    /// The tail kernel's rounds among them.
    pub tail: u64,
    /// Whether the stage ended (every row assigned; no column above lambda), not the
    /// safeguard.
    pub done: bool,
}

/// Auction state on the GPU for one m x n shape.
pub struct GpuAuction {
    ctx: Context,
    m: usize,
    n: usize,
    bid_pipe: Kernel<BidPush>,
    assign_pipe: Kernel<u32>,
    prepare_pipe: Kernel<ShapePush>,
    reverse_pipe: Kernel<ReversePush>,
    reverse_assign_pipe: Kernel<SettlePush>,
    reverse_tail_pipe: Kernel<ReverseTailPush>,
    forward_tail_pipe: Kernel<ForwardTailPush>,
    phase_pipe: Kernel<u32>,
    transpose_pipe: Kernel<ShapePush>,
    d: Buffer<f32>,
    /// D transposed (n x m), which the reverse rounds scan by column; none when m = n, where
    /// every column is assigned once every row is, and no reverse round has anything to do.
    dt: Option<Buffer<f32>>,
    prices: Buffer<f32>,
    owner: Buffer<u32>,
    col4row: Buffer<u32>,
    bid_col: Buffer<u32>,
    /// Per column: (highest bid's bits << 32) | ~(its row); 0 without a bid.
    col_best: Buffer<u64>,
    free_rows: Buffer<u32>,
    free_host: Buffer<u32>,
    /// The lowest price of an assigned column, for even and odd reverse rounds.
    lambda: Buffer<u32>,
    value: Buffer<f32>,
    offer_row: Buffer<u32>,
    offer_price: Buffer<f32>,
    /// Per row, for even and odd reverse rounds: (lowest offered value's bits << 32) | its
    /// column; all ones without an offer.
    row_offer: Buffer<u64>,
    /// Columns above lambda, counted by even and odd reverse rounds, then the rounds a
    /// tail kernel ran in the stage.
    active: Buffer<u32>,
    active_host: Buffer<u32>,
}

/// The width of a workgroup that scans `len` values: `COLUMNS_PER_INVOCATION` each, a
/// power of two between the subgroup size and `max_wg`.
fn scan_workgroup(len: usize, subgroup: u32, max_wg: u32) -> u32 {
    (len as u32).div_ceil(COLUMNS_PER_INVOCATION).next_power_of_two().clamp(subgroup.min(max_wg), max_wg)
}

impl GpuAuction {
    /// Creates the pipelines and buffers for an m x n problem (m <= n).
    pub fn new(ctx: &Context, m: usize, n: usize) -> Result<GpuAuction> {
        let info = ctx.info();
        let values = (m as u64).saturating_mul(n as u64);
        if m == 0 || m > n || values > u32::MAX as u64 {
            return Err(MosaicError::InvalidInput(format!(
                "a {m} x {n} auction needs 1 <= m <= n and at most 2^32 - 1 entries (32-bit indices)"
            )));
        }
        ctx.check_binding(values.saturating_mul(4), &format!("a {m} x {n} auction"))?;
        if m < n {
            kit::budget::check(values.saturating_mul(8), format!("a {m} x {n} auction's D and its transpose"))?;
        }
        if !info.shader_buffer_int64_atomics {
            return Err(MosaicError::Engine(engine::EngineError::Unsupported(
                "the GPU auction needs 64-bit atomics on storage buffers (shaderBufferInt64Atomics)".into(),
            )));
        }
        let subgroup = info.subgroup_size.max(1);
        // The scanning kernels keep one shared slot per subgroup, 64 at most.
        let max_wg = MAX_BID_WORKGROUP.min(info.max_workgroup_invocations).min(64 * subgroup);
        let bid_wg = scan_workgroup(n, subgroup, max_wg);
        let reverse_wg = scan_workgroup(m, subgroup, max_wg);
        let linear = LINEAR_WORKGROUP.min(info.max_workgroup_invocations);
        let bid_pipe = ctx.kernel(&kernels::AUCTION_BID, &[bid_wg])?;
        let assign_pipe = ctx.kernel(&kernels::AUCTION_ASSIGN, &[linear])?;
        let prepare_pipe = ctx.kernel(&kernels::AUCTION_PREPARE, &[linear])?;
        let reverse_pipe = ctx.kernel(&kernels::AUCTION_REVERSE, &[reverse_wg])?;
        let reverse_assign_pipe = ctx.kernel(&kernels::AUCTION_REVERSE_ASSIGN, &[linear])?;
        let tail_wg =
            scan_workgroup(n, subgroup, MAX_TAIL_WORKGROUP.min(info.max_workgroup_invocations).min(64 * subgroup));
        let reverse_tail_pipe = ctx.kernel(&kernels::AUCTION_REVERSE_TAIL, &[tail_wg])?;
        let forward_tail_pipe = ctx.kernel(&kernels::AUCTION_FORWARD_TAIL, &[tail_wg])?;
        let phase_pipe = ctx.kernel(&kernels::AUCTION_PHASE, &[linear])?;
        let transpose_pipe = ctx.kernel(&kernels::AUCTION_TRANSPOSE, &[])?;
        let device = |len: usize, what: &str| ctx.buffer::<u32>(len, Location::Device, what);
        Ok(GpuAuction {
            ctx: ctx.clone(),
            m,
            n,
            bid_pipe,
            assign_pipe,
            prepare_pipe,
            reverse_pipe,
            reverse_assign_pipe,
            reverse_tail_pipe,
            forward_tail_pipe,
            phase_pipe,
            transpose_pipe,
            d: ctx.buffer(m * n, Location::Device, "auction distances")?,
            dt: (m < n).then(|| ctx.buffer(m * n, Location::Device, "auction distances, transposed")).transpose()?,
            prices: ctx.buffer(n, Location::Device, "auction prices")?,
            owner: device(n, "auction column owners")?,
            col4row: device(m, "auction row columns")?,
            bid_col: device(m, "auction bid columns")?,
            col_best: ctx.buffer(n, Location::Device, "auction highest bids")?,
            free_rows: device(1, "auction unassigned rows")?,
            free_host: ctx.buffer(1, Location::Download, "auction unassigned rows (host)")?,
            lambda: device(2, "auction lowest assigned price")?,
            value: ctx.buffer(m, Location::Device, "auction row values")?,
            offer_row: device(n, "auction offered rows")?,
            offer_price: ctx.buffer(n, Location::Device, "auction offered prices")?,
            row_offer: ctx.buffer(2 * m, Location::Device, "auction lowest offers")?,
            active: device(3, "auction columns above lambda")?,
            active_host: ctx.buffer(3, Location::Download, "auction columns above lambda (host)")?,
        })
    }

    /// D transposed as the device holds it after [`GpuAuction::load_scaled`], where m < n
    /// (for the stage test).
    pub fn transposed(&self) -> Result<Option<Vec<f32>>> {
        Ok(self.dt.as_ref().map(|dt| self.ctx.download(dt)).transpose()?)
    }

    fn linear_groups(&self, len: usize) -> u32 {
        (len as u32).div_ceil(LINEAR_WORKGROUP.min(self.ctx.info().max_workgroup_invocations))
    }

    /// Uploads D / `scale` as [`crate::auction::normalised`] makes it, converted on the way
    /// (no normalised copy on the host), and resets the state.
    pub fn load_scaled(&self, d: &DistanceMatrix, scale: f64) -> Result<()> {
        assert_eq!((d.rows, d.cols), (self.m, self.n), "distances for another shape");
        super::upload::upload_rows(&self.ctx, d, &self.d, "auction distances", |from, to| {
            to.iter_mut().zip(from).for_each(|(t, &x)| *t = (x / scale) as f32);
            true
        })?;
        self.reset()
    }

    /// Transposes the uploaded distances for the reverse rounds (where m < n), and resets
    /// the state: prices 0, nothing assigned.
    fn reset(&self) -> Result<()> {
        let mut rec = self.ctx.recorder()?;
        let (m, n) = (self.m as u32, self.n as u32);
        if let Some(dt) = &self.dt {
            let groups = [n.div_ceil(TILE).min(engine::MAX_GROUPS_PER_AXIS), m.div_ceil(TILE), 1];
            rec.pass(&self.transpose_pipe).read(&self.d).write(dt).push(&ShapePush { m, n }).dispatch(groups)?;
        }
        rec.fill(&self.prices, 0);
        rec.fill(&self.col_best, 0);
        rec.fill(&self.row_offer, NO_OFFER);
        for b in [&self.owner, &self.col4row, &self.lambda, &self.bid_col, &self.offer_row] {
            rec.fill(b, NONE);
        }
        rec.fill(&self.free_rows, self.m as u32);
        rec.fill(&self.active, 0);
        rec.submit()?.wait()?;
        Ok(())
    }

    fn record_round(&self, rec: &mut Recorder, eps: f32) -> Result<()> {
        let m = self.m as u32;
        rec.pass(&self.bid_pipe)
            .read(&self.d)
            .read(&self.prices)
            .read(&self.col4row)
            .write(&self.bid_col)
            .read_write(&self.col_best)
            .push(&BidPush { m, n: self.n as u32, eps })
            .dispatch_linear(self.m.min(MAX_SCAN_GROUPS) as u32)?;
        rec.pass(&self.assign_pipe)
            .read_write(&self.bid_col)
            .read_write(&self.col_best)
            .read_write(&self.prices)
            .read_write(&self.owner)
            .read_write(&self.col4row)
            .read_write(&self.free_rows)
            .push(&m)
            .dispatch_linear(self.linear_groups(self.m))?;
        Ok(())
    }

    /// Records lambda and the rows' values (`auction_prepare.comp`), and zeroes the first
    /// reverse round's count of columns above lambda.
    fn record_prepare(&self, rec: &mut Recorder) -> Result<()> {
        let (m, n) = (self.m as u32, self.n as u32);
        rec.fill(&self.lambda, NONE);
        rec.pass(&self.prepare_pipe)
            .read(&self.d)
            .read(&self.prices)
            .read(&self.owner)
            .read(&self.col4row)
            .write(&self.value)
            .read_write(&self.lambda)
            .write(&self.active)
            .push(&ShapePush { m, n })
            .dispatch_linear(self.linear_groups(self.m.max(self.n)))?;
        Ok(())
    }

    /// Records reverse round number `round` of a run: its words are the set `round % 2`
    /// (no fills: each would cost a transfer barrier in every round).
    fn record_reverse_round(&self, rec: &mut Recorder, dt: &Buffer<f32>, eps: f32, round: u64) -> Result<()> {
        let (m, n, parity) = (self.m as u32, self.n as u32, (round % 2) as u32);
        rec.pass(&self.reverse_pipe)
            .read(dt)
            .read_write(&self.prices)
            .read(&self.owner)
            .read(&self.value)
            .read_write(&self.lambda)
            .write(&self.offer_row)
            .write(&self.offer_price)
            .read_write(&self.row_offer)
            .read_write(&self.active)
            .push(&ReversePush { m, n, eps, parity })
            .dispatch_linear(self.n.min(MAX_SCAN_GROUPS) as u32)?;
        rec.pass(&self.reverse_assign_pipe)
            .read_write(&self.offer_row)
            .read(&self.offer_price)
            .read_write(&self.row_offer)
            .read_write(&self.prices)
            .read_write(&self.owner)
            .write(&self.col4row)
            .write(&self.value)
            .read_write(&self.lambda)
            .push(&SettlePush { m, n, parity })
            .dispatch_linear(self.linear_groups(self.m.max(self.n)))?;
        Ok(())
    }

    /// Records the forward tail kernel before a pair of Jacobi rounds.
    fn record_forward_tail(&self, rec: &mut Recorder, eps: f32) -> Result<()> {
        let (m, n) = (self.m as u32, self.n as u32);
        rec.pass(&self.forward_tail_pipe)
            .read(&self.d)
            .read_write(&self.prices)
            .read_write(&self.owner)
            .read_write(&self.col4row)
            .read_write(&self.free_rows)
            .read_write(&self.active)
            .push(&ForwardTailPush { m, n, eps, rounds: TAIL_ROUNDS, limit: TAIL_LIMIT })
            .dispatch_linear(1)?;
        Ok(())
    }

    /// Records the reverse tail kernel before Jacobi round `parity` of a pair.
    fn record_reverse_tail(&self, rec: &mut Recorder, dt: &Buffer<f32>, eps: f32, parity: u32) -> Result<()> {
        let (m, n) = (self.m as u32, self.n as u32);
        rec.pass(&self.reverse_tail_pipe)
            .read(dt)
            .read_write(&self.prices)
            .read_write(&self.owner)
            .read_write(&self.col4row)
            .read_write(&self.value)
            .read_write(&self.lambda)
            .read_write(&self.active)
            .push(&ReverseTailPush { m, n, eps, parity, rounds: TAIL_ROUNDS, limit: TAIL_LIMIT })
            .dispatch_linear(1)?;
        Ok(())
    }

    /// Runs `round(rec, k)` (k: the round's number within a run) until the count it
    /// maintains, word `word` of `count`, read through `host`, is 0 after a run of
    /// [`ROUNDS_PER_RUN`] of them, or the safeguard stops; returns the rounds run, counting
    /// whole runs. The rounds and the readback are recorded once, as a replay.
    fn rounds_until_zero(
        &self,
        count: &Buffer<u32>,
        host: &Buffer<u32>,
        word: usize,
        round: impl Fn(&mut Recorder, u64) -> Result<()>,
    ) -> Result<u64> {
        let mut rec = self.ctx.replay_recorder()?;
        for k in 0..ROUNDS_PER_RUN {
            round(&mut rec, k)?;
        }
        rec.copy(count, host);
        rec.host_read(host);
        let replay: Replay = rec.finish()?;
        let mut rounds = 0;
        while rounds < MAX_ROUNDS_PER_PHASE {
            replay.run()?;
            rounds += ROUNDS_PER_RUN;
            if host.mapped()?[word] == 0 {
                break;
            }
        }
        Ok(rounds)
    }

    /// Forward rounds at `eps` until every row is assigned (or the safeguard stops). Each
    /// pair of Jacobi rounds follows the tail kernel, which runs the rounds with few
    /// unassigned rows in one dispatch.
    pub fn forward(&self, eps: f32) -> Result<Stage> {
        let jacobi = self.rounds_until_zero(&self.free_rows, &self.free_host, 0, |rec, k| {
            if k % 2 == 0 {
                self.record_forward_tail(rec, eps)?;
            }
            self.record_round(rec, eps)
        })?;
        // The tail's count, zeroed by the reset or the phase change before this stage.
        let tail = self.ctx.download(&self.active)?[TAIL_WORD] as u64;
        Ok(Stage { rounds: jacobi + tail, tail, done: self.free_host.mapped()?[0] == 0 })
    }

    /// Reverse rounds at `eps` (every row assigned) until no unassigned column costs more
    /// than lambda (none when m = n: no column is unassigned). The
    /// stage starts from lambda and the rows' values as `auction_prepare.comp` sets them;
    /// each pair of Jacobi rounds follows the tail kernel, which runs the rounds with few
    /// columns above lambda in one dispatch.
    pub fn reverse(&self, eps: f32) -> Result<Stage> {
        let Some(dt) = &self.dt else { return Ok(Stage { rounds: 0, tail: 0, done: true }) };
        let mut rec = self.ctx.recorder()?;
        rec.fill(&self.active, 0);
        self.record_prepare(&mut rec)?;
        rec.submit()?.wait()?;
        let last = (ROUNDS_PER_RUN - 1) as usize % 2;
        let jacobi = self.rounds_until_zero(&self.active, &self.active_host, last, |rec, k| {
            if k % 2 == 0 {
                self.record_reverse_tail(rec, dt, eps, 0)?;
            }
            self.record_reverse_round(rec, dt, eps, k)
        })?;
        // Every run reads the whole block back, the tail's count with it.
        let words = self.active_host.mapped()?;
        let tail = words[TAIL_WORD] as u64;
        Ok(Stage { rounds: jacobi + tail, tail, done: words[last] == 0 })
    }

    /// One epsilon phase: forward rounds, then (if every row was assigned) reverse rounds;
    /// returns the rounds of each.
    pub fn phase(&self, eps: f32) -> Result<(u64, u64)> {
        let forward = self.forward(eps)?;
        let reverse = if forward.done { self.reverse(eps)?.rounds } else { 0 };
        Ok((forward.rounds, reverse))
    }

    /// Between phases: unassigned columns go to lambda, and every row and column is
    /// released.
    pub fn next_phase(&self) -> Result<()> {
        let mut rec = self.ctx.recorder()?;
        self.record_prepare(&mut rec)?;
        rec.pass(&self.phase_pipe)
            .read_write(&self.prices)
            .read_write(&self.owner)
            .read(&self.lambda)
            .push(&(self.n as u32))
            .dispatch_linear(self.linear_groups(self.n))?;
        rec.fill(&self.col4row, NONE);
        rec.fill(&self.free_rows, self.m as u32);
        rec.fill(&self.active, 0);
        rec.submit()?.wait()?;
        Ok(())
    }

    /// GPU time of `rounds` forward rounds (or, with every row assigned, reverse rounds
    /// from the stage's start) at `eps` from the state the device holds, in one plain
    /// command buffer (for the profile test).
    #[cfg(test)]
    pub fn profile_rounds(&self, eps: f32, rounds: u64, reverse: bool) -> Result<Vec<engine::PassTime>> {
        let mut rec = self.ctx.recorder()?;
        rec.enable_profiling(rounds as u32 + 2)?;
        match (&self.dt, reverse) {
            (Some(dt), true) => {
                self.record_prepare(&mut rec)?;
                rec.mark("prepare");
                for k in 0..rounds {
                    self.record_reverse_round(&mut rec, dt, eps, k)?;
                    rec.mark("reverse round");
                }
            }
            _ => {
                for _ in 0..rounds {
                    self.record_round(&mut rec, eps)?;
                    rec.mark("forward round");
                }
            }
        }
        Ok(engine::profile::total_by_name(&rec.submit()?.wait_profiled()?))
    }

    /// Downloads prices and assignment.
    pub fn state(&self, rounds: u64, reverse_rounds: u64) -> Result<AuctionState> {
        Ok(AuctionState {
            prices: self.ctx.download(&self.prices)?,
            col4row: self.ctx.download(&self.col4row)?,
            rounds,
            reverse_rounds,
        })
    }

    /// The whole schedule on the distances [`GpuAuction::load`] uploaded; `on_phase(k,
    /// phases)` after phase k (1-based).
    pub fn run(&self, epsilons: &[f32], mut on_phase: impl FnMut(usize, usize)) -> Result<AuctionState> {
        let (mut rounds, mut reverse_rounds) = (0, 0);
        for (k, &eps) in epsilons.iter().enumerate() {
            if k > 0 {
                self.next_phase()?;
            }
            let (forward, reverse) = self.phase(eps)?;
            rounds += forward;
            reverse_rounds += reverse;
            on_phase(k + 1, epsilons.len());
        }
        self.state(rounds, reverse_rounds)
    }
}

/// Solves `d` exactly: auction on the GPU, certificate and repair on the CPU; `progress`
/// reaches d.rows at the end (it moves once per phase, then through the repair).
pub fn solve(ctx: &Context, d: &DistanceMatrix, progress: &ProgressBar) -> Result<ExactSolution> {
    let start = Instant::now();
    let scale = scale_of(d);
    let auction = GpuAuction::new(ctx, d.rows, d.cols)?;
    auction.load_scaled(d, scale)?;
    let upload_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    let state = auction.run(&epsilons_for(d, scale), |phase, phases| {
        progress.set_position((d.rows * phase / (phases + 1)) as u64);
    })?;
    let auction_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    let certified = repair::certify_or_repair(d, &state, scale)?;
    progress.set_position(d.rows as u64);
    Ok(ExactSolution {
        cost: d.cost(&certified.assignment),
        assignment: certified.assignment,
        gap: certified.gap,
        repaired_rows: certified.repaired_rows,
        fallback: certified.fallback,
        rounds: state.rounds,
        reverse_rounds: state.reverse_rounds,
        upload_ms,
        auction_ms,
        repair_ms: start.elapsed().as_secs_f64() * 1e3,
    })
}
