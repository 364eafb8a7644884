//! What the searches share: potentials and a partial assignment, and the step that ends
//! every search (the potential update and the path flip).

use crate::matrix::{effective_repeat, DistanceMatrix, Slots};

use super::{Solution, NONE};

/// Potentials and a partial assignment such that u[i] + v[j] <= d[i][j] on every entry a
/// search can reach (u is 0 on a row not yet assigned), with equality on assigned pairs,
/// v <= 0, and v[j] = 0 on a tile with a use left where m < n x repeat.
pub struct State<'a> {
    pub d: &'a DistanceMatrix,
    /// Uses per tile (the effective repeat).
    pub capacity: usize,
    pub u: Vec<f64>,
    pub v: Vec<f64>,
    pub col4row: Vec<usize>,
    /// The rows on each tile.
    pub rows_of: Vec<Vec<usize>>,
}

impl<'a> State<'a> {
    /// No row assigned, every potential 0; each tile may serve `repeat` rows.
    pub fn new(d: &'a DistanceMatrix, repeat: usize) -> Self {
        State {
            d,
            capacity: effective_repeat(repeat, d.rows),
            u: vec![0.0; d.rows],
            v: vec![0.0; d.cols],
            col4row: vec![NONE; d.rows],
            rows_of: vec![Vec::new(); d.cols],
        }
    }

    /// Whether tile `j` has a use left (reaching it ends a search).
    pub fn has_room(&self, j: usize) -> bool {
        self.rows_of[j].len() < self.capacity
    }

    /// Ends the search from the free row `cur` that settled `rows` (each at the distance it
    /// was reached) and `cols` (each at its distance) and reached the tile `sink` with a use
    /// left at `min_val`; `pred` gives each settled column's predecessor row. Keeps every
    /// potential feasible, makes the path tight and moves each row of it to the next tile.
    pub fn augment(
        &mut self,
        cur: usize,
        sink: usize,
        min_val: f64,
        rows: &[(usize, f64)],
        cols: &[(usize, f64)],
        pred: impl Fn(usize) -> usize,
    ) {
        for &(r, at) in rows {
            self.u[r] += min_val - at;
        }
        for &(j, at) in cols {
            self.v[j] -= min_val - at;
        }
        let mut j = sink;
        loop {
            let r = pred(j);
            let previous = std::mem::replace(&mut self.col4row[r], j);
            self.rows_of[j].push(r);
            if r == cur {
                break;
            }
            let on = &mut self.rows_of[previous];
            on.swap_remove(on.iter().position(|&x| x == r).expect("a row is on its tile"));
            j = previous;
        }
    }

    /// The assignment and potentials (every row must be assigned), with each tile's uses as
    /// slots ([`Slots`]) sharing the tile's potential.
    pub fn into_solution(self) -> Solution {
        let slots = Slots::new(self.d, self.capacity);
        let n = self.d.cols;
        Solution {
            slots: slots.of_assignment(&self.col4row),
            v: (0..slots.count).map(|s| self.v[s % n]).collect(),
            assignment: self.col4row,
            u: self.u,
            repeat: self.capacity,
        }
    }
}
