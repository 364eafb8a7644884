//! The auction on the GPU: three kernels per Jacobi round (`auction_bid.comp`: every
//! unassigned row bids; `auction_claim.comp`: the smallest of the highest bidders claims
//! the column; `auction_assign.comp`: winners take their columns, previous owners leave),
//! and `auction_phase.comp` between epsilon phases. Rounds are recorded in batches that
//! grow while a phase goes on; the host reads back only the count of unassigned rows at the
//! end of each batch, since launch and synchronisation dominate small problems.

use engine::{Buffer, ComputePipeline, Context, Location, Recorder};

use super::{AuctionState, NONE};
use crate::error::{MosaicError, Result};
use crate::shaders;

/// Rounds in a phase's first batch; each later batch doubles, up to [`MAX_BATCH`].
const FIRST_BATCH: u64 = 4;
/// Most rounds per submission (rounds after the phase ended cost only empty launches).
const MAX_BATCH: u64 = 128;
/// Rounds after which a phase stops unfinished (a safeguard: the repair completes whatever
/// assignment the auction reached).
const MAX_ROUNDS_PER_PHASE: u64 = 1 << 20;
/// Invocations per workgroup of the per-row and per-column kernels.
const LINEAR_WORKGROUP: u32 = 64;
/// Largest workgroup of the bidding kernel (the scan of a row is split over it).
const MAX_BID_WORKGROUP: u32 = 256;
/// Columns each bidding invocation aims to scan.
const COLUMNS_PER_INVOCATION: u32 = 8;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct BidPush {
    m: u32,
    n: u32,
    eps: f32,
}

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct PhasePush {
    n: u32,
    step: u32,
}

/// Auction state on the GPU for one m x n shape.
pub struct GpuAuction {
    ctx: Context,
    m: usize,
    n: usize,
    bid_pipe: ComputePipeline,
    claim_pipe: ComputePipeline,
    assign_pipe: ComputePipeline,
    phase_pipe: ComputePipeline,
    d: Buffer<f32>,
    prices: Buffer<f32>,
    owner: Buffer<u32>,
    col4row: Buffer<u32>,
    bid_col: Buffer<u32>,
    bid_val: Buffer<u32>,
    col_bid: Buffer<u32>,
    winner: Buffer<u32>,
    free_rows: Buffer<u32>,
    free_host: Buffer<u32>,
    lambda: Buffer<u32>,
}

impl GpuAuction {
    /// Creates the pipelines and buffers for an m x n problem (m <= n).
    pub fn new(ctx: &Context, m: usize, n: usize) -> Result<GpuAuction> {
        let info = ctx.info();
        let bytes = (m as u64).saturating_mul(n as u64).saturating_mul(4);
        if m == 0 || m > n || bytes > info.max_storage_buffer_range || bytes / 4 > u32::MAX as u64 {
            return Err(MosaicError::InvalidInput(format!(
                "a {m} x {n} auction ({:.0} MiB) does not fit this device's largest storage buffer ({:.0} MiB) \
                 or 32-bit indices",
                bytes as f64 / 1048576.0,
                info.max_storage_buffer_range as f64 / 1048576.0
            )));
        }
        let subgroup = info.subgroup_size.max(1);
        // The bidding kernel keeps one shared slot per subgroup, 64 at most.
        let max_wg = MAX_BID_WORKGROUP.min(info.max_workgroup_invocations).min(64 * subgroup);
        let bid_wg =
            (n as u32).div_ceil(COLUMNS_PER_INVOCATION).next_power_of_two().clamp(subgroup.min(max_wg), max_wg);
        let linear = LINEAR_WORKGROUP.min(info.max_workgroup_invocations);
        let bid_pipe = ctx.compute_pipeline_for::<BidPush>("auction_bid", shaders::AUCTION_BID, 6, &[bid_wg])?;
        let claim_pipe = ctx.compute_pipeline_for::<u32>("auction_claim", shaders::AUCTION_CLAIM, 4, &[linear])?;
        let assign_pipe = ctx.compute_pipeline_for::<u32>("auction_assign", shaders::AUCTION_ASSIGN, 7, &[linear])?;
        let phase_pipe =
            ctx.compute_pipeline_for::<PhasePush>("auction_phase", shaders::AUCTION_PHASE, 3, &[linear])?;
        let device = |len: usize, what: &str| ctx.buffer::<u32>(len, Location::Device, what);
        Ok(GpuAuction {
            ctx: ctx.clone(),
            m,
            n,
            bid_pipe,
            claim_pipe,
            assign_pipe,
            phase_pipe,
            d: ctx.buffer(m * n, Location::Device, "auction distances")?,
            prices: ctx.buffer(n, Location::Device, "auction prices")?,
            owner: device(n, "auction column owners")?,
            col4row: device(m, "auction row columns")?,
            bid_col: device(m, "auction bid columns")?,
            bid_val: device(m, "auction bids")?,
            col_bid: device(n, "auction highest bids")?,
            winner: device(n, "auction winners")?,
            free_rows: device(1, "auction unassigned rows")?,
            free_host: ctx.buffer(1, Location::Download, "auction unassigned rows (host)")?,
            lambda: device(1, "auction lowest assigned price")?,
        })
    }

    fn linear_groups(&self, len: usize) -> u32 {
        (len as u32).div_ceil(LINEAR_WORKGROUP.min(self.ctx.info().max_workgroup_invocations))
    }

    /// Uploads the normalised distances and resets the state: prices 0, nothing assigned.
    pub fn load(&self, d: &[f32]) -> Result<()> {
        assert_eq!(d.len(), self.m * self.n, "distances for another shape");
        self.ctx.write(&self.d, 0, d)?;
        let mut rec = self.ctx.recorder()?;
        rec.fill(&self.prices, 0);
        rec.fill(&self.col_bid, 0);
        for b in [&self.owner, &self.col4row, &self.bid_col, &self.winner, &self.lambda] {
            rec.fill(b, NONE);
        }
        rec.fill(&self.free_rows, self.m as u32);
        rec.barrier();
        rec.submit()?.wait()?;
        Ok(())
    }

    fn record_round(&self, rec: &mut Recorder, eps: f32) {
        let m = self.m as u32;
        let push = BidPush { m, n: self.n as u32, eps };
        let bindings = [
            self.d.binding(),
            self.prices.binding(),
            self.col4row.binding(),
            self.bid_col.binding(),
            self.bid_val.binding(),
            self.col_bid.binding(),
        ];
        rec.dispatch_linear(&self.bid_pipe, &bindings, &push, m);
        rec.barrier();
        let bindings = [self.bid_col.binding(), self.bid_val.binding(), self.col_bid.binding(), self.winner.binding()];
        rec.dispatch_linear(&self.claim_pipe, &bindings, &m, self.linear_groups(self.m));
        rec.barrier();
        let bindings = [
            self.bid_col.binding(),
            self.col_bid.binding(),
            self.winner.binding(),
            self.prices.binding(),
            self.owner.binding(),
            self.col4row.binding(),
            self.free_rows.binding(),
        ];
        rec.dispatch_linear(&self.assign_pipe, &bindings, &m, self.linear_groups(self.m));
        rec.barrier();
    }

    /// Runs rounds at `eps` until every row is assigned (or the safeguard stops the phase);
    /// returns the rounds run, counting whole batches.
    pub fn phase(&self, eps: f32) -> Result<u64> {
        let mut rounds = 0;
        let mut batch = FIRST_BATCH;
        while rounds < MAX_ROUNDS_PER_PHASE {
            let mut rec = self.ctx.recorder()?;
            for _ in 0..batch {
                self.record_round(&mut rec, eps);
            }
            rec.copy(&self.free_rows, &self.free_host);
            rec.submit()?.wait()?;
            rounds += batch;
            if self.free_host.mapped()?[0] == 0 {
                break;
            }
            batch = (batch * 2).min(MAX_BATCH);
        }
        Ok(rounds)
    }

    /// Between phases: unassigned prices come down to the cheapest assigned one, and every
    /// row and column is released.
    pub fn next_phase(&self) -> Result<()> {
        let mut rec = self.ctx.recorder()?;
        rec.fill(&self.lambda, NONE);
        rec.barrier();
        let groups = self.linear_groups(self.n);
        for step in 0..2 {
            let push = PhasePush { n: self.n as u32, step };
            let bindings = [self.prices.binding(), self.owner.binding(), self.lambda.binding()];
            rec.dispatch_linear(&self.phase_pipe, &bindings, &push, groups);
            rec.barrier();
        }
        rec.fill(&self.col4row, NONE);
        rec.fill(&self.free_rows, self.m as u32);
        rec.barrier();
        rec.submit()?.wait()?;
        Ok(())
    }

    /// Downloads prices and assignment.
    pub fn state(&self, rounds: u64) -> Result<AuctionState> {
        Ok(AuctionState {
            prices: self.ctx.download(&self.prices)?,
            col4row: self.ctx.download(&self.col4row)?,
            rounds,
        })
    }

    /// The whole schedule on `d` (normalised); `on_phase(k, phases)` after phase k (1-based).
    pub fn run(&self, d: &[f32], epsilons: &[f32], mut on_phase: impl FnMut(usize, usize)) -> Result<AuctionState> {
        self.load(d)?;
        let mut rounds = 0;
        for (k, &eps) in epsilons.iter().enumerate() {
            if k > 0 {
                self.next_phase()?;
            }
            rounds += self.phase(eps)?;
            on_phase(k + 1, epsilons.len());
        }
        self.state(rounds)
    }
}
