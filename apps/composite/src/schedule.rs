//! Who exchanges what with whom: binary-swap, radix-k and direct-send as rounds of groups.
//!
//! In a round, the members of a group hold the same pixel span; it is cut into equal parts,
//! member j keeps part j, sends every other part to its member and composites the parts it
//! receives with its own in member order. Groups are always contiguous blocks of ranks in
//! rank order (lowest digits first in radix-k), so compositing in member order with ties
//! going to the earlier member is compositing in rank order: the result does not depend on
//! the strategy or the rank count.
//!
//! - direct-send: one round, one group of all ranks.
//! - radix-k: the rank count factored into rounds of at most [`RADIX_MAX`] (primes larger
//!   than that form their own round), group members `RADIX` apart by the product of the
//!   earlier factors.
//! - binary-swap: rounds of pairs. For a rank count that is not a power of two, a first
//!   "fold" round pairs ranks (2i, 2i + 1) for the excess i < n - 2^floor(log2 n): rank 2i + 1
//!   sends its whole image to 2i and sits out; the remaining 2^k ranks (in rank order) then
//!   binary-swap.

/// How partial images are exchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    BinarySwap,
    RadixK,
    DirectSend,
}

/// Largest group size radix-k builds by multiplying prime factors.
pub const RADIX_MAX: usize = 8;

/// Ranks that exchange in one round. With `fold`, member 1 hands its whole span to member 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub members: Vec<usize>,
    pub fold: bool,
}

/// The rounds of a strategy for `ranks` ranks.
pub fn rounds(strategy: Strategy, ranks: usize) -> Vec<Vec<Group>> {
    if ranks <= 1 {
        return Vec::new();
    }
    match strategy {
        Strategy::DirectSend => vec![vec![Group { members: (0..ranks).collect(), fold: false }]],
        Strategy::RadixK => radix_rounds(&radix_factors(ranks), &(0..ranks).collect::<Vec<_>>()),
        Strategy::BinarySwap => {
            let p = 1usize << (usize::BITS - 1 - ranks.leading_zeros());
            let excess = ranks - p;
            let mut out = Vec::new();
            if excess > 0 {
                out.push((0..excess).map(|i| Group { members: vec![2 * i, 2 * i + 1], fold: true }).collect());
            }
            let survivors: Vec<usize> = (0..p).map(|v| if v < excess { 2 * v } else { v + excess }).collect();
            out.extend(radix_rounds(&vec![2; p.trailing_zeros() as usize], &survivors));
            out
        }
    }
}

/// Prime factors of `n` merged greedily into factors of at most [`RADIX_MAX`].
pub fn radix_factors(n: usize) -> Vec<usize> {
    let mut primes = Vec::new();
    let (mut m, mut d) = (n, 2);
    while m > 1 {
        while m % d == 0 {
            primes.push(d);
            m /= d;
        }
        d += 1;
    }
    let mut factors: Vec<usize> = Vec::new();
    for p in primes {
        match factors.last_mut() {
            Some(f) if *f * p <= RADIX_MAX => *f *= p,
            _ => factors.push(p),
        }
    }
    factors
}

/// Radix-k rounds over `members` (virtual rank v is `members[v]`).
fn radix_rounds(factors: &[usize], members: &[usize]) -> Vec<Vec<Group>> {
    let mut stride = 1;
    let mut out = Vec::new();
    for &k in factors {
        let mut groups = Vec::new();
        for v in 0..members.len() {
            if (v / stride) % k == 0 {
                groups.push(Group { members: (0..k).map(|j| members[v + j * stride]).collect(), fold: false });
            }
        }
        out.push(groups);
        stride *= k;
    }
    out
}

/// Cuts `lo..hi` into `k` near-equal parts; returns the `k - 1` inner bounds.
pub fn cut(lo: usize, hi: usize, k: usize) -> Vec<usize> {
    (1..k).map(|j| lo + (hi - lo) * j / k).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulates the schedule on rank sets: every group must see contiguous, ordered blocks,
    /// and every rank must end in exactly one final span.
    fn check(strategy: Strategy, n: usize) {
        let mut sets: Vec<Vec<usize>> = (0..n).map(|r| vec![r]).collect();
        let mut active = vec![true; n];
        for round in rounds(strategy, n) {
            let mut next = sets.clone();
            for g in &round {
                let union: Vec<usize> = g.members.iter().flat_map(|&m| sets[m].clone()).collect();
                let mut sorted = union.clone();
                sorted.sort();
                assert_eq!(union, sorted, "{strategy:?} n={n}: group {g:?} out of rank order");
                assert!(sorted.windows(2).all(|w| w[1] == w[0] + 1), "{strategy:?} n={n}: not contiguous");
                for &m in &g.members {
                    assert!(active[m]);
                    next[m] = union.clone();
                }
                if g.fold {
                    active[g.members[1]] = false;
                }
            }
            sets = next;
        }
        for r in 0..n {
            if active[r] {
                assert_eq!(sets[r], (0..n).collect::<Vec<_>>(), "{strategy:?} n={n}: rank {r} misses ranks");
            }
        }
    }

    #[test]
    fn every_strategy_composites_all_ranks_in_order() {
        for n in 1..=13 {
            for s in [Strategy::BinarySwap, Strategy::RadixK, Strategy::DirectSend] {
                check(s, n);
            }
        }
        assert_eq!(radix_factors(12), vec![4, 3]);
        assert_eq!(radix_factors(64), vec![8, 8]);
        assert_eq!(radix_factors(3), vec![3]);
    }
}
