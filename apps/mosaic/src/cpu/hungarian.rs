//! The Hungarian method's steps ([`crate::hungarian`]) one after another: the twin the GPU
//! solver is checked against. A pass of step 4 visits the zeros in list order; everything
//! else is as on the GPU.

use crate::hungarian::{reductions, zeros, HungarianState, NONE};

/// Solves the m x n (m <= n) whole-number problem `d` (row-major).
pub fn solve(d: &[i32], m: usize, n: usize) -> HungarianState {
    let (u, v) = reductions(d, m, n);
    let mut s = Steps { d, n, zeros: zeros(d, n, &u, &v), u, v, ..Steps::new(m, n) };
    s.star();
    while s.cover() < m {
        loop {
            match s.prime_pass() {
                Pass::Free => break,
                Pass::Primed => {}
                Pass::Nothing => s.dual_update(),
            }
        }
        s.augment();
    }
    HungarianState {
        col4row: s.star_col,
        u: s.u,
        v: s.v,
        passes: s.passes,
        dual_updates: s.dual_updates,
        augmentations: s.augmentations,
    }
}

/// What a pass of step 4 did.
enum Pass {
    /// Primed a zero in a row without a star: step 5.
    Free,
    /// Primed only rows with stars: another pass.
    Primed,
    /// Primed nothing: step 6.
    Nothing,
}

struct Steps<'a> {
    d: &'a [i32],
    n: usize,
    u: Vec<i32>,
    v: Vec<i32>,
    zeros: Vec<u32>,
    star_col: Vec<u32>,
    star_row: Vec<u32>,
    prime: Vec<u32>,
    green: Vec<u32>,
    cover_row: Vec<bool>,
    cover_col: Vec<bool>,
    passes: u64,
    dual_updates: u64,
    augmentations: u64,
}

impl<'a> Steps<'a> {
    fn new(m: usize, n: usize) -> Steps<'a> {
        Steps {
            d: &[],
            n,
            u: Vec::new(),
            v: Vec::new(),
            zeros: Vec::new(),
            star_col: vec![NONE; m],
            star_row: vec![NONE; n],
            prime: vec![NONE; m],
            green: vec![NONE; n],
            cover_row: vec![false; m],
            cover_col: vec![false; n],
            passes: 0,
            dual_updates: 0,
            augmentations: 0,
        }
    }

    fn split(&self, z: u32) -> (usize, usize) {
        (z as usize / self.n, z as usize % self.n)
    }

    /// Step 2: stars every zero whose row and column are still free.
    fn star(&mut self) {
        for k in 0..self.zeros.len() {
            let (i, j) = self.split(self.zeros[k]);
            if self.star_col[i] == NONE && self.star_row[j] == NONE {
                self.star_col[i] = j as u32;
                self.star_row[j] = i as u32;
            }
        }
    }

    /// Step 3: covers the starred columns, clears rows and primes; returns the stars.
    fn cover(&mut self) -> usize {
        self.cover_row.fill(false);
        self.prime.fill(NONE);
        self.green.fill(NONE);
        for (c, &r) in self.cover_col.iter_mut().zip(&self.star_row) {
            *c = r != NONE;
        }
        self.cover_col.iter().filter(|&&c| c).count()
    }

    /// Step 4: one pass over the zeros.
    fn prime_pass(&mut self) -> Pass {
        self.passes += 1;
        let (mut primed, mut free) = (false, false);
        for k in 0..self.zeros.len() {
            let (i, j) = self.split(self.zeros[k]);
            if self.cover_col[j] || self.cover_row[i] || self.prime[i] != NONE {
                continue;
            }
            self.prime[i] = j as u32;
            primed = true;
            match self.star_col[i] {
                NONE => free = true,
                s => {
                    self.cover_row[i] = true;
                    self.cover_col[s as usize] = false;
                }
            }
        }
        match (free, primed) {
            (true, _) => Pass::Free,
            (false, true) => Pass::Primed,
            (false, false) => Pass::Nothing,
        }
    }

    /// Step 6: the least uncovered reduced cost moves the potentials; the zeros are rebuilt.
    fn dual_update(&mut self) {
        self.dual_updates += 1;
        let n = self.n;
        let mut delta = i32::MAX;
        let rows = self.d.chunks(n).zip(&self.u).enumerate().filter(|(i, _)| !self.cover_row[*i]);
        for (row, &ui) in rows.map(|(_, r)| r) {
            for (j, (&x, &vj)) in row.iter().zip(&self.v).enumerate() {
                if !self.cover_col[j] {
                    delta = delta.min(x - ui - vj);
                }
            }
        }
        assert!(delta > 0 && delta < i32::MAX, "step 6 found no positive uncovered cost");
        for (u, _) in self.u.iter_mut().zip(&self.cover_row).filter(|(_, &c)| !c) {
            *u += delta;
        }
        for (v, _) in self.v.iter_mut().zip(&self.cover_col).filter(|(_, &c)| c) {
            *v -= delta;
        }
        self.zeros = zeros(self.d, n, &self.u, &self.v);
    }

    /// Step 5: flips the alternating path of every free primed row (one per end column
    /// where paths join).
    fn augment(&mut self) {
        self.augmentations += 1;
        for i in 0..self.prime.len() {
            if self.prime[i] == NONE || self.star_col[i] != NONE {
                continue;
            }
            let mut c = self.prime[i];
            self.green[c as usize] = i as u32;
            while self.star_row[c as usize] != NONE {
                let r = self.star_row[c as usize];
                c = self.prime[r as usize];
                self.green[c as usize] = r;
            }
        }
        for end in 0..self.n {
            if self.green[end] == NONE || self.star_row[end] != NONE {
                continue;
            }
            let mut j = end as u32;
            loop {
                let r = self.green[j as usize];
                let old = std::mem::replace(&mut self.star_col[r as usize], j);
                self.star_row[j as usize] = r;
                if old == NONE {
                    break;
                }
                j = old;
            }
        }
    }
}
