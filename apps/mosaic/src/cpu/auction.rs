//! The CPU twin of the GPU auction: the same Jacobi rounds in the same f32 arithmetic, so
//! prices and assignments match the GPU bit for bit after every stage (the GPU's oracle).

use crate::auction::{AuctionState, NONE};

/// Auction state on the CPU for one normalised m x n matrix.
pub struct CpuAuction<'a> {
    m: usize,
    n: usize,
    d: &'a [f32],
    pub prices: Vec<f32>,
    pub owner: Vec<u32>,
    pub col4row: Vec<u32>,
    pub rounds: u64,
    pub reverse_rounds: u64,
}

/// The smallest of `values` (best), at the smallest index, and the second smallest (the
/// next in the multiset; `f32::MAX` for none): the selection of `auction_select.glsl`.
fn select(values: impl Iterator<Item = f32>) -> (f32, f32, usize) {
    let (mut best, mut second, mut index) = (f32::MAX, f32::MAX, 0);
    for (k, x) in values.enumerate() {
        if x < best {
            second = best;
            best = x;
            index = k;
        } else if x < second {
            second = x;
        }
    }
    (best, second, index)
}

/// A row's bid: its cheapest column (smallest index on ties) and the price it offers.
fn bid(row: &[f32], prices: &[f32], eps: f32) -> (usize, f32) {
    let (best, second, index) = select(row.iter().zip(prices).map(|(&dj, &pj)| dj + pj));
    let p = prices[index];
    let gap = if second == f32::MAX { 0.0 } else { second - best };
    let bid = (p + gap) + eps;
    (index, if bid > p { bid } else { f32::from_bits(p.to_bits() + 1) })
}

/// The winner of each target among `bids` (bidder, target, key), bidders in increasing
/// order: the largest key (`higher`) or the smallest, the smallest bidder on ties.
fn winners(bids: &[(usize, usize, f32)], targets: usize, higher: bool) -> Vec<Option<(usize, f32)>> {
    let mut winner: Vec<Option<(usize, f32)>> = vec![None; targets];
    for &(k, t, key) in bids {
        let better = |w: (usize, f32)| {
            let (a, b) = (key.to_bits(), w.1.to_bits());
            if higher {
                a > b
            } else {
                a < b
            }
        };
        if winner[t].is_none_or(better) {
            winner[t] = Some((k, key));
        }
    }
    winner
}

impl<'a> CpuAuction<'a> {
    /// All prices 0, nothing assigned.
    pub fn new(d: &'a [f32], m: usize, n: usize) -> CpuAuction<'a> {
        assert_eq!(d.len(), m * n);
        CpuAuction {
            m,
            n,
            d,
            prices: vec![0.0; n],
            owner: vec![NONE; n],
            col4row: vec![NONE; m],
            rounds: 0,
            reverse_rounds: 0,
        }
    }

    /// One forward Jacobi round; returns the rows still unassigned.
    pub fn round(&mut self, eps: f32) -> usize {
        let bids: Vec<(usize, usize, f32)> = (0..self.m)
            .filter(|&i| self.col4row[i] == NONE)
            .map(|i| {
                let (j, b) = bid(&self.d[i * self.n..(i + 1) * self.n], &self.prices, eps);
                (i, j, b)
            })
            .collect();
        // A strictly higher bid replaces the winner and the smallest row keeps a tie, as
        // the GPU's atomicMax then atomicMin.
        for (j, w) in winners(&bids, self.n, true).into_iter().enumerate() {
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

    /// The lowest price of an assigned column (`None` while nothing is assigned).
    pub fn lambda(&self) -> Option<f32> {
        let lowest = (0..self.n).filter(|&j| self.owner[j] != NONE).map(|j| self.prices[j].to_bits()).min();
        lowest.map(f32::from_bits)
    }

    /// One reverse Jacobi round (every row assigned): as `auction_reverse.comp`, then the
    /// lowest offer of each row wins. Returns the columns that were above lambda.
    pub fn reverse_round(&mut self, eps: f32) -> usize {
        let (m, n, d) = (self.m, self.n, self.d);
        let l = self.lambda().expect("reverse rounds run with every row assigned");
        let w: Vec<f32> = (0..m)
            .map(|i| {
                let c = self.col4row[i] as usize;
                d[i * n + c] + self.prices[c]
            })
            .collect();
        let mut active = 0;
        let mut offers = Vec::new();
        for j in 0..n {
            if self.owner[j] != NONE || self.prices[j] <= l {
                continue;
            }
            active += 1;
            let (b, s, i) = select((0..m).map(|i| d[i * n + j] - w[i]));
            let top = -b - eps;
            let low = -s - eps;
            let offer = if low > l { low } else { l };
            let value = d[i * n + j] + offer;
            if top <= l || value >= w[i] {
                self.prices[j] = l;
            } else {
                offers.push((j, i, value, offer));
            }
        }
        let keyed: Vec<(usize, usize, f32)> = offers.iter().map(|&(j, i, value, _)| (j, i, value)).collect();
        let won = winners(&keyed, m, false);
        for &(j, i, _, offer) in &offers {
            if won[i].is_some_and(|(k, _)| k == j) {
                self.prices[j] = offer;
                self.owner[self.col4row[i] as usize] = NONE;
                self.owner[j] = i as u32;
                self.col4row[i] = j as u32;
            }
        }
        self.reverse_rounds += 1;
        active
    }

    /// Forward rounds until every row is assigned.
    pub fn forward(&mut self, eps: f32) {
        while self.round(eps) > 0 {}
    }

    /// Reverse rounds until no unassigned column costs more than lambda.
    pub fn reverse(&mut self, eps: f32) {
        while self.reverse_round(eps) > 0 {}
    }

    /// One epsilon phase: forward, then reverse rounds.
    pub fn phase(&mut self, eps: f32) {
        self.forward(eps);
        self.reverse(eps);
    }

    /// Between phases: unassigned columns go to lambda (as `auction_phase.comp`), and every
    /// row and column is released.
    pub fn next_phase(&mut self) {
        if let Some(l) = self.lambda() {
            for (p, _) in self.prices.iter_mut().zip(&self.owner).filter(|(_, &o)| o == NONE) {
                *p = l;
            }
        }
        self.owner.fill(NONE);
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
        AuctionState {
            prices: self.prices,
            col4row: self.col4row,
            rounds: self.rounds,
            reverse_rounds: self.reverse_rounds,
        }
    }
}
