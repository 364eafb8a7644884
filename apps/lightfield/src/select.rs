//! Quantisation and the greedy coefficient choice of Algorithm 1, in the exact form both
//! encoders implement (this file is the reference semantics; the GPU kernel reaches the same
//! sets with a threshold search instead of a sort).
//!
//! Because every dictionary is orthonormal, the squared reconstruction error of a patch
//! equals the squared distance between its coefficients `x` and the stored (sparse,
//! quantised) ones (Eq. 9-12): a nullified coefficient costs `x^2`, a kept one costs its
//! quantisation error `d^2 = (x - step * level)^2`. Keeping the largest coefficients first,
//! the error after keeping a set S is `sum(x^2) - sum over S of (x^2 - d^2)`, and
//! `x^2 - d^2 >= 0` for every coefficient, so the error only falls as S grows.
//!
//! A coefficient's *key* is the bit pattern of `|x|` (ordered like `|x|` for finite
//! floats), or 0 when it quantises to level 0 (keeping it would cost bits and gain
//! nothing). A kept set is always `{ j : key_j >= t }` for a threshold `t >= 1`: equal keys
//! are kept or dropped together, which makes the choice independent of sort order.
//! - Success: the largest `t` whose set meets the error budget, if that set has at most
//!   `cap` coefficients (the sparsity T, or fewer once another dictionary did better).
//! - Failure (no dictionary meets the budget within T): the T largest coefficients, ties
//!   at the T-th broken by lower location (so a failed patch holds exactly T coefficients
//!   whenever T of them are non-zero); the dictionary with the least error wins.

/// A threshold above every finite key: keeps nothing.
pub const KEEP_NOTHING: u32 = 0x7F80_0001;

/// Uniform quantiser with a dead zone of half a step: `level = sign(x) floor(|x|/step + 1/2)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quantizer {
    pub step: f32,
    pub inv_step: f32,
}

impl Quantizer {
    pub fn new(step: f32) -> Quantizer {
        Quantizer { step, inv_step: 1.0 / step }
    }

    /// The level of `x` (computed without fused multiply-add, as the GPU's `precise` does).
    pub fn level(&self, x: f32) -> i32 {
        let a = (x.abs() * self.inv_step + 0.5).floor() as i32;
        if x < 0.0 {
            -a
        } else {
            a
        }
    }

    /// The value a level decodes to.
    pub fn value(&self, level: i32) -> f32 {
        level as f32 * self.step
    }

    /// The selection key of `x` (0 if it quantises to 0).
    pub fn key(&self, x: f32) -> u32 {
        if self.level(x) == 0 {
            0
        } else {
            x.abs().to_bits()
        }
    }
}

/// A kept set `{ key >= threshold }` plus the first `tie_take` coefficients (by location)
/// whose key is `tie_key`, with its size and squared error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    pub count: usize,
    pub err: f64,
    pub threshold: u32,
    pub tie_key: u32,
    pub tie_take: usize,
}

impl Choice {
    fn threshold(count: usize, err: f64, threshold: u32) -> Choice {
        Choice { count, err, threshold, tie_key: 0, tie_take: 0 }
    }

    /// Locations of the kept coefficients among `keys`, ascending.
    pub fn kept(&self, keys: &[u32]) -> Vec<u32> {
        let mut ties = 0;
        let mut out = Vec::with_capacity(self.count);
        for (j, &k) in keys.iter().enumerate() {
            let tie = self.tie_take > 0 && k == self.tie_key && ties < self.tie_take;
            if k >= self.threshold || tie {
                ties += tie as usize;
                out.push(j as u32);
            }
        }
        out
    }
}

/// Keys, squared values and gains (`x^2 - d^2`) of one coefficient tensor.
pub struct Terms {
    pub keys: Vec<u32>,
    gains: Vec<f64>,
    total: f64,
    scratch: Vec<(u32, f64)>,
}

impl Terms {
    pub fn new(x: &[f32], q: Quantizer) -> Terms {
        let mut t = Terms { keys: Vec::new(), gains: Vec::new(), total: 0.0, scratch: Vec::new() };
        t.reset(x, q);
        t
    }

    /// Recomputes the terms for new coefficients, reusing the allocations.
    pub fn reset(&mut self, x: &[f32], q: Quantizer) {
        self.keys.clear();
        self.gains.clear();
        self.total = 0.0;
        for &v in x {
            let x2 = v as f64 * v as f64;
            let level = q.level(v);
            let d = v as f64 - q.value(level) as f64;
            self.total += x2;
            self.keys.push(if level == 0 { 0 } else { v.abs().to_bits() });
            self.gains.push(x2 - d * d);
        }
    }

    /// Error of the set `{ key > g }` and its size.
    fn above(&self, g: u32) -> (usize, f64) {
        let mut count = 0;
        let mut gain = 0.0;
        for (&k, &gn) in self.keys.iter().zip(&self.gains) {
            if k > g {
                count += 1;
                gain += gn;
            }
        }
        (count, self.total - gain)
    }

    /// The `(r+1)`-th largest key, if there are more than `r` non-zero keys.
    fn key_after(&mut self, r: usize) -> Option<u32> {
        let mut keys: Vec<u32> = self.keys.iter().copied().filter(|&k| k != 0).collect();
        if keys.len() <= r {
            return None;
        }
        let (_, g, _) = keys.select_nth_unstable_by(r, |a, b| b.cmp(a));
        Some(*g)
    }

    /// The `cap` largest non-zero coefficients (all of them if fewer), ties at the last
    /// place broken by lower location.
    pub fn most_within(&mut self, cap: usize) -> Choice {
        match self.key_after(cap) {
            None => {
                let (count, err) = self.above(0);
                Choice::threshold(count, err, if count == 0 { KEEP_NOTHING } else { 1 })
            }
            Some(g) => {
                let (count, err) = self.above(g);
                // The group of key g straddles the cap: take its first members.
                let take = cap - count;
                let gain = self.keys.iter().zip(&self.gains).find(|(&k, _)| k == g).map_or(0.0, |(_, &gn)| gn);
                Choice { count: cap, err: err - take as f64 * gain, threshold: g + 1, tie_key: g, tie_take: take }
            }
        }
    }

    /// The smallest set `{ key >= t }` whose error is at most `budget`, if it has at most
    /// `cap` coefficients.
    pub fn fewest_within(&mut self, budget: f64, cap: usize) -> Option<Choice> {
        if self.total <= budget {
            return Some(Choice::threshold(0, self.total, KEEP_NOTHING));
        }
        // Cheap rejection first: even the largest set allowed by the cap misses the budget.
        if self.most_within(cap).err > budget {
            return None;
        }
        let mut pairs = std::mem::take(&mut self.scratch);
        pairs.clear();
        pairs.extend(self.keys.iter().zip(&self.gains).filter(|(&k, _)| k != 0).map(|(&k, &g)| (k, g)));
        pairs.sort_unstable_by_key(|p| std::cmp::Reverse(p.0));
        let mut err = self.total;
        let mut i = 0;
        let mut found = None;
        while i < pairs.len() {
            let key = pairs[i].0;
            while i < pairs.len() && pairs[i].0 == key {
                err -= pairs[i].1;
                i += 1;
            }
            if i > cap {
                break;
            }
            if err <= budget {
                found = Some(Choice::threshold(i, err, key));
                break;
            }
        }
        self.scratch = pairs;
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiser_levels_and_keys() {
        let q = Quantizer::new(0.5);
        assert_eq!(q.level(0.24), 0);
        assert_eq!(q.level(0.26), 1);
        assert_eq!(q.level(-0.74), -1);
        assert_eq!(q.level(-0.76), -2);
        assert_eq!(q.key(0.1), 0);
        assert_eq!(q.key(-1.0), 1.0f32.to_bits());
    }

    #[test]
    fn fewest_within_matches_brute_force() {
        let q = Quantizer::new(0.1);
        let x = [3.0f32, -0.04, 0.7, -2.0, 0.7, 0.33, -0.2, 0.01];
        let mut t = Terms::new(&x, q);
        let err_of = |set: &[usize]| -> f64 {
            x.iter()
                .enumerate()
                .map(|(j, &v)| {
                    let kept = if set.contains(&j) { q.value(q.level(v)) as f64 } else { 0.0 };
                    (v as f64 - kept).powi(2)
                })
                .sum()
        };
        // Budget between keeping {0, 3} and {0, 3, 2, 4}: the two 0.7s come as a pair.
        let budget = err_of(&[0, 3]) - 0.01;
        let c = t.fewest_within(budget, 8).unwrap();
        assert_eq!(c.count, 4);
        assert!((c.err - err_of(&[0, 3, 2, 4])).abs() < 1e-12);
        assert_eq!(c.threshold, 0.7f32.to_bits());
        // A cap of 3 cannot hold the pair: no success; the 3 largest break the tie by location.
        assert!(t.fewest_within(budget, 3).is_none());
        let m = t.most_within(3);
        assert_eq!(m.count, 3);
        assert_eq!(m.kept(&t.keys), vec![0, 2, 3]);
        assert!((m.err - err_of(&[0, 2, 3])).abs() < 1e-12);
        // A budget above the energy keeps nothing.
        assert_eq!(t.fewest_within(100.0, 8).unwrap().count, 0);
        // The coefficient that quantises to 0 (0.01, -0.04) is never kept.
        assert_eq!(t.most_within(8).count, 6);
    }
}
