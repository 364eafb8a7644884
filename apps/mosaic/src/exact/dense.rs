//! The dense search: Dijkstra without a heap, as LAPJV and scipy's linear_sum_assignment
//! (Crouse's algorithm) run it. Each row reached relaxes every column in one pass over its
//! row of D that also finds the smallest tentative distance; a second pass collects the
//! columns at that distance, which settle together (as LAPJV's SCAN list), and the search
//! ends at once if one of them has a use left.
//!
//! The first pass has no branches, so it runs in vector registers: a settled column's
//! working potential is -inf, which makes every later candidate distance +inf (never an
//! improvement), and its distance is +inf (never the smallest).

use super::state::State;

/// Independent minima the relaxing pass keeps (its vector width).
const LANES: usize = 8;

/// The scratch of one search.
pub struct Dense {
    /// Tentative distances of unsettled columns; +inf once settled.
    dist: Vec<f64>,
    pred: Vec<u32>,
    /// v, or -inf on a settled column.
    v: Vec<f64>,
    rows: Vec<(usize, f64)>,
    cols: Vec<(usize, f64)>,
    ties: Vec<usize>,
}

impl Dense {
    pub fn new(n: usize) -> Self {
        Dense {
            dist: vec![f64::INFINITY; n],
            pred: vec![0; n],
            v: vec![0.0; n],
            rows: Vec::new(),
            cols: Vec::new(),
            ties: Vec::new(),
        }
    }

    /// Relaxes every column from row `i` of D (`row`; `base` = the row's distance - u[i])
    /// and returns the smallest tentative distance of an unsettled column.
    fn relax(&mut self, row: &[f64], base: f64, i: u32) -> f64 {
        let mut lowest = [f64::INFINITY; LANES];
        let step = |lowest: &mut f64, dij: f64, vj: f64, dist: &mut f64, pred: &mut u32| {
            let nd = base + dij - vj;
            let better = nd < *dist;
            *dist = if better { nd } else { *dist };
            *pred = if better { i } else { *pred };
            *lowest = if *dist < *lowest { *dist } else { *lowest };
        };
        let n = row.len() / LANES * LANES;
        let chunks = row[..n].chunks_exact(LANES).zip(self.v[..n].chunks_exact(LANES));
        for ((r, v), (dist, pred)) in
            chunks.zip(self.dist[..n].chunks_exact_mut(LANES).zip(self.pred[..n].chunks_exact_mut(LANES)))
        {
            for l in 0..LANES {
                step(&mut lowest[l], r[l], v[l], &mut dist[l], &mut pred[l]);
            }
        }
        let tail = row[n..].iter().zip(&self.v[n..]).zip(self.dist[n..].iter_mut().zip(&mut self.pred[n..]));
        for ((&dij, &vj), (dist, pred)) in tail {
            step(&mut lowest[0], dij, vj, dist, pred);
        }
        lowest.into_iter().fold(f64::INFINITY, f64::min)
    }

    /// Assigns the free row `cur` along a shortest augmenting path (reaching a full tile
    /// reaches every row on it).
    pub fn insert(&mut self, st: &mut State, cur: usize) {
        self.dist.fill(f64::INFINITY);
        self.v.copy_from_slice(&st.v);
        self.rows.clear();
        self.cols.clear();
        self.rows.push((cur, 0.0));
        let mut scanned = 0;
        let (sink, min_val) = 'search: loop {
            let mut lowest = f64::INFINITY;
            while scanned < self.rows.len() {
                let (i, r) = self.rows[scanned];
                lowest = self.relax(st.d.row(i), r - st.u[i], i as u32);
                scanned += 1;
            }
            self.ties.clear();
            self.ties.extend(self.dist.iter().enumerate().filter(|&(_, &x)| x == lowest).map(|(j, _)| j));
            if let Some(&j) = self.ties.iter().find(|&&j| st.has_room(j)) {
                self.cols.push((j, lowest));
                break 'search (j, lowest);
            }
            for &j in &self.ties {
                self.cols.push((j, lowest));
                self.dist[j] = f64::INFINITY;
                self.v[j] = f64::NEG_INFINITY;
                self.rows.extend(st.rows_of[j].iter().map(|&i| (i, lowest)));
            }
        };
        st.augment(cur, sink, min_val, &self.rows, &self.cols, |j| self.pred[j] as usize);
    }
}
