//! The CPU twin of the GPU auction: the same Jacobi rounds in the same f32 arithmetic, so
//! prices and assignments match the GPU bit for bit after every phase (the GPU's oracle).

use super::{AuctionState, NONE};

/// Auction state on the CPU for one normalised m x n matrix.
pub struct CpuAuction<'a> {
    m: usize,
    n: usize,
    d: &'a [f32],
    pub prices: Vec<f32>,
    pub owner: Vec<u32>,
    pub col4row: Vec<u32>,
    pub rounds: u64,
}

/// A row's bid: its cheapest column (smallest index on ties) and the price it offers.
fn bid(row: &[f32], prices: &[f32], eps: f32) -> (usize, f32) {
    let (mut best, mut second, mut index) = (f32::MAX, f32::MAX, 0);
    for (j, (&dj, &pj)) in row.iter().zip(prices).enumerate() {
        let x = dj + pj;
        if x < best {
            second = best;
            best = x;
            index = j;
        } else if x < second {
            second = x;
        }
    }
    let p = prices[index];
    let gap = if second == f32::MAX { 0.0 } else { second - best };
    let bid = (p + gap) + eps;
    (index, if bid > p { bid } else { f32::from_bits(p.to_bits() + 1) })
}

impl<'a> CpuAuction<'a> {
    /// All prices 0, nothing assigned.
    pub fn new(d: &'a [f32], m: usize, n: usize) -> CpuAuction<'a> {
        assert_eq!(d.len(), m * n);
        CpuAuction { m, n, d, prices: vec![0.0; n], owner: vec![NONE; n], col4row: vec![NONE; m], rounds: 0 }
    }

    /// One Jacobi round; returns the rows still unassigned.
    pub fn round(&mut self, eps: f32) -> usize {
        let bids: Vec<(usize, usize, f32)> = (0..self.m)
            .filter(|&i| self.col4row[i] == NONE)
            .map(|i| {
                let (j, b) = bid(&self.d[i * self.n..(i + 1) * self.n], &self.prices, eps);
                (i, j, b)
            })
            .collect();
        // Rows come in increasing order, so a strictly higher bid replaces the winner and the
        // smallest row keeps a tie, as the GPU's atomicMax then atomicMin.
        let mut winner: Vec<Option<(usize, f32)>> = vec![None; self.n];
        for &(i, j, b) in &bids {
            if winner[j].is_none_or(|(_, w)| b.to_bits() > w.to_bits()) {
                winner[j] = Some((i, b));
            }
        }
        for (j, w) in winner.into_iter().enumerate() {
            if let Some((i, b)) = w {
                self.prices[j] = b;
                let previous = std::mem::replace(&mut self.owner[j], i as u32);
                if previous != NONE {
                    self.col4row[previous as usize] = NONE;
                }
                self.col4row[i] = j as u32;
            }
        }
        self.rounds += 1;
        self.col4row.iter().filter(|&&j| j == NONE).count()
    }

    /// Runs rounds until every row is assigned.
    pub fn phase(&mut self, eps: f32) {
        while self.round(eps) > 0 {}
    }

    /// Between phases: unassigned columns come down to the cheapest assigned price, and
    /// every row and column is released.
    pub fn next_phase(&mut self) {
        let lambda = (0..self.n).filter(|&j| self.owner[j] != NONE).map(|j| self.prices[j].to_bits()).min();
        for j in 0..self.n {
            if let (Some(l), NONE) = (lambda, self.owner[j]) {
                self.prices[j] = self.prices[j].min(f32::from_bits(l));
            }
            self.owner[j] = NONE;
        }
        self.col4row.fill(NONE);
    }

    /// The whole schedule.
    pub fn run(mut self, epsilons: &[f32]) -> AuctionState {
        for (k, &eps) in epsilons.iter().enumerate() {
            if k > 0 {
                self.next_phase();
            }
            self.phase(eps);
        }
        AuctionState { prices: self.prices, col4row: self.col4row, rounds: self.rounds }
    }
}
