//! Shortest augmenting paths from a warm start, on the square problem: the m real rows plus
//! n - m implicit dummy rows of cost 0 everywhere (the rectangular problem's unused columns
//! are the dummies' columns). The step is the row insertion of [`crate::exact`]'s
//! Jonker-Volgenant solver (Dijkstra over reduced costs d - u - v to the nearest free
//! column, then the potential update and the path flip); the exact solver runs it inside its own
//! cold-start loop, while here it starts from the auction's potentials, where a column freed
//! by a row may keep a negative potential (in the square problem every column's potential
//! is free).
//!
//! The dummies are never stored: they are interchangeable, and dual feasibility with
//! tightness forces them to one potential `u_dummy` = -max v, which every update keeps. A
//! Dijkstra run that reaches a dummy's column visits all dummies and all their columns at
//! once (one scan of the zero row), so a run costs O(n) per real row visited.
//!
//! Invariants: u[i] + v[j] <= d[i][j] for every real row, u_dummy + v[j] <= 0, equality on
//! every dummy's column. Assigned real rows need not be tight: a run keeps the reduced cost
//! of every assigned edge it does not flip, and makes every edge it flips tight.

use crate::matrix::DistanceMatrix;

const NONE: usize = usize::MAX;
/// `row4col` of a column a dummy row holds.
pub const DUMMY: usize = usize::MAX - 1;

/// An unvisited column of a run: (column, potential, tentative distance, predecessor, free).
type Unvisited = (usize, f64, f64, usize, bool);

/// Potentials and assignment under repair, with the scratch of the Dijkstra runs.
pub struct Augmenter<'a> {
    d: &'a DistanceMatrix,
    pub u: Vec<f64>,
    pub u_dummy: f64,
    pub v: Vec<f64>,
    pub col4row: Vec<usize>,
    pub row4col: Vec<usize>,
    shortest: Vec<f64>,
    path: Vec<usize>,
    rem: Vec<Unvisited>,
    visited_cols: Vec<usize>,
    visited_rows: Vec<usize>,
}

impl<'a> Augmenter<'a> {
    /// Starts from potentials and a partial assignment (`row4col` holds real rows, `DUMMY`
    /// or `usize::MAX` for free) that meet the invariants.
    pub fn new(d: &'a DistanceMatrix, u: Vec<f64>, u_dummy: f64, v: Vec<f64>, row4col: Vec<usize>) -> Augmenter<'a> {
        let mut col4row = vec![NONE; d.rows];
        for (j, &i) in row4col.iter().enumerate().filter(|(_, &i)| i < d.rows) {
            col4row[i] = j;
        }
        Augmenter {
            d,
            u,
            u_dummy,
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

    /// Relaxes every unvisited column from a row whose cost row is `row` (None: a dummy's
    /// zeros) reached at `base` = distance - u, and returns the position of the closest.
    fn scan(&mut self, row: Option<&[f64]>, base: f64, from: usize) -> usize {
        let mut lowest = f64::INFINITY;
        let mut index = NONE;
        for (it, (j, vj, dist, pred, free)) in self.rem.iter_mut().enumerate() {
            let r = base + row.map_or(0.0, |row| row[*j]) - *vj;
            if r < *dist {
                *pred = from;
                *dist = r;
            }
            // Ties prefer a free column: the path ends sooner.
            if *dist < lowest || (*dist == lowest && *free) {
                lowest = *dist;
                index = it;
            }
        }
        index
    }

    /// Unassigns the real row `i` (its column becomes free).
    pub fn release(&mut self, i: usize) {
        let old = std::mem::replace(&mut self.col4row[i], NONE);
        if old != NONE {
            self.row4col[old] = NONE;
        }
    }

    /// Frees the real row `cur` (if assigned) and assigns it again along a shortest
    /// augmenting path: afterwards its edge, and every edge the path flipped, is tight.
    pub fn reinsert(&mut self, cur: usize) {
        self.release(cur);
        self.rem.clear();
        self.rem.extend((0..self.d.cols).map(|j| (j, self.v[j], f64::INFINITY, NONE, self.row4col[j] == NONE)));
        self.visited_cols.clear();
        self.visited_rows.clear();
        let mut dummy_entry = NONE;
        let mut min_val = 0.0f64;
        let mut row = cur;
        let sink = loop {
            let at = if row == DUMMY {
                self.scan(None, min_val - self.u_dummy, DUMMY)
            } else {
                self.visited_rows.push(row);
                self.scan(Some(self.d.row(row)), min_val - self.u[row], row)
            };
            let (j, _, dist, pred, _) = self.rem.swap_remove(at);
            min_val = dist;
            self.shortest[j] = dist;
            self.path[j] = pred;
            self.visited_cols.push(j);
            match self.row4col[j] {
                NONE => break j,
                DUMMY if dummy_entry == NONE => {
                    // Every dummy and its column is reached here, at this distance.
                    dummy_entry = j;
                    row = DUMMY;
                    let (shortest, visited) = (&mut self.shortest, &mut self.visited_cols);
                    let row4col = &self.row4col;
                    self.rem.retain(|&(l, ..)| {
                        let dummy = row4col[l] == DUMMY;
                        if dummy {
                            shortest[l] = dist;
                            visited.push(l);
                        }
                        !dummy
                    });
                }
                DUMMY => unreachable!("dummy columns leave the unvisited set together"),
                r => row = r,
            }
        };
        self.u[cur] += min_val;
        for &r in &self.visited_rows[1..] {
            self.u[r] += min_val - self.shortest[self.col4row[r]];
        }
        if dummy_entry != NONE {
            self.u_dummy += min_val - self.shortest[dummy_entry];
        }
        for &j in &self.visited_cols {
            self.v[j] -= min_val - self.shortest[j];
        }
        let mut j = sink;
        loop {
            let r = self.path[j];
            self.row4col[j] = r;
            if r == DUMMY {
                // The dummy moved here from its entry column, which its predecessor takes.
                j = dummy_entry;
                continue;
            }
            j = std::mem::replace(&mut self.col4row[r], j);
            if r == cur {
                break;
            }
        }
    }
}
