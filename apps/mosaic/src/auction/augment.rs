//! Shortest augmenting paths from a warm start: the row insertion of [`crate::exact`]'s
//! Jonker-Volgenant solver (Dijkstra over reduced costs d - u - v to the nearest free
//! column, then the potential update and the path flip), made to start from any potentials
//! and partial assignment meeting its invariants. exact.rs runs its insertions inside one
//! cold-start loop (over the slots of `--repeat`); this is the same step, one column per
//! tile, callable row by row.
//!
//! Invariants the start must meet, which every insertion keeps: u[i] + v[j] <= d[i][j] for
//! every assigned row i and every j, with equality on its column; v <= 0, and v = 0 on
//! every unassigned column.

use crate::matrix::DistanceMatrix;

const NONE: usize = usize::MAX;

/// Potentials and assignment under repair, with the scratch of the Dijkstra runs.
pub struct Augmenter<'a> {
    d: &'a DistanceMatrix,
    pub u: Vec<f64>,
    pub v: Vec<f64>,
    pub col4row: Vec<usize>,
    row4col: Vec<usize>,
    shortest: Vec<f64>,
    path: Vec<usize>,
    /// The unvisited columns of a run, compacted in parallel arrays so the scan reads them
    /// contiguously: (column, potential, tentative distance, predecessor, free).
    rem: Vec<(usize, f64, f64, usize, bool)>,
    visited_cols: Vec<usize>,
    visited_rows: Vec<usize>,
}

impl<'a> Augmenter<'a> {
    /// Starts from `u`, `v` and a partial assignment (`usize::MAX` = unassigned) that meet
    /// the invariants.
    pub fn new(d: &'a DistanceMatrix, u: Vec<f64>, v: Vec<f64>, col4row: Vec<usize>) -> Augmenter<'a> {
        let mut row4col = vec![NONE; d.cols];
        for (i, &j) in col4row.iter().enumerate().filter(|(_, &j)| j != NONE) {
            row4col[j] = i;
        }
        Augmenter {
            d,
            u,
            v,
            col4row,
            row4col,
            shortest: vec![0.0; d.cols],
            path: vec![NONE; d.cols],
            rem: Vec::with_capacity(d.cols),
            visited_cols: Vec::new(),
            visited_rows: Vec::new(),
        }
    }

    /// Assigns the unassigned row `cur` along a shortest augmenting path.
    pub fn insert(&mut self, cur: usize) {
        let d = self.d;
        self.rem.clear();
        self.rem.extend((0..d.cols).map(|j| (j, self.v[j], f64::INFINITY, NONE, self.row4col[j] == NONE)));
        self.visited_cols.clear();
        self.visited_rows.clear();
        let mut min_val = 0.0f64;
        let mut i = cur;
        let sink = loop {
            self.visited_rows.push(i);
            let row = d.row(i);
            let base = min_val - self.u[i];
            let mut lowest = f64::INFINITY;
            let mut index = NONE;
            for (it, (j, vj, dist, pred, free)) in self.rem.iter_mut().enumerate() {
                let r = base + row[*j] - *vj;
                if r < *dist {
                    *pred = i;
                    *dist = r;
                }
                // Ties prefer a free column: the path ends sooner.
                if *dist < lowest || (*dist == lowest && *free) {
                    lowest = *dist;
                    index = it;
                }
            }
            min_val = lowest;
            let (j, _, dist, pred, _) = self.rem.swap_remove(index);
            self.shortest[j] = dist;
            self.path[j] = pred;
            self.visited_cols.push(j);
            if self.row4col[j] == NONE {
                break j;
            }
            i = self.row4col[j];
        };
        self.u[cur] += min_val;
        for &r in &self.visited_rows[1..] {
            self.u[r] += min_val - self.shortest[self.col4row[r]];
        }
        for &j in &self.visited_cols {
            self.v[j] -= min_val - self.shortest[j];
        }
        let mut j = sink;
        loop {
            let r = self.path[j];
            self.row4col[j] = r;
            std::mem::swap(&mut self.col4row[r], &mut j);
            if r == cur {
                break;
            }
        }
    }
}
