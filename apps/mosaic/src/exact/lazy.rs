//! The lazy search: Dijkstra with a heap, each row relaxing only its cheapest columns.
//!
//! Each row keeps its cheapest columns (32 at first, sorted), and only those are relaxed
//! when the row is reached. The columns left out cost at least the list's largest entry
//! t[i], and v <= 0 always, so their reduced costs are at least t[i] - u[i]: the row is
//! reached at distance r, a heap event at r + t[i] - u[i] stands for all of them, and only
//! when the search gets that far is the list grown (4 times longer; past n / 4 the row scans
//! its whole row of D from then on). Every step therefore settles the same distances as a
//! scan of every entry would. On a photomosaic's matrix (many patches wanting the same few
//! tiles) a search reaches hundreds of rows but reads a few dozen entries of each, where a
//! dense scan reads all n of each. Ties in the heap settle free columns first (the path ends
//! sooner), then columns, then list growths.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use rayon::prelude::*;

use super::state::State;
use super::NONE;
use crate::matrix::DistanceMatrix;

/// The cheapest columns each row lists at first.
pub const FIRST_LIST: usize = 32;
/// A list grows by this factor when the search needs the columns it leaves out.
const GROWTH: usize = 4;

/// The columns of one row that its search relaxes.
#[derive(Clone, Debug)]
enum Columns {
    /// The cheapest ones, sorted by (distance, column); every other column of the row costs
    /// at least the last one's distance.
    Listed(Vec<(f64, u32)>),
    /// All of them, read from D.
    All,
}

/// The `k` cheapest columns of `row` (ties by column), sorted, or all of them. One pass
/// keeps the entries below a running threshold in a buffer of at most 4k, cut back to the k
/// cheapest whenever it fills.
fn cheapest(row: &[f64], k: usize) -> Columns {
    let n = row.len();
    if k > n / GROWTH {
        return Columns::All;
    }
    let order = |a: &(f64, u32), b: &(f64, u32)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    let mut kept: Vec<(f64, u32)> = Vec::with_capacity(4 * k);
    let mut threshold = f64::INFINITY;
    for (j, &x) in row.iter().enumerate() {
        // Equal to the threshold: the k kept all come before (ties by column).
        if x < threshold {
            kept.push((x, j as u32));
            if kept.len() == 4 * k {
                kept.select_nth_unstable_by(k - 1, order);
                kept.truncate(k);
                threshold = kept.iter().map(|e| e.0).fold(f64::NEG_INFINITY, f64::max);
            }
        }
    }
    if kept.len() > k {
        kept.select_nth_unstable_by(k - 1, order);
        kept.truncate(k);
    }
    kept.sort_unstable_by(order);
    Columns::Listed(kept)
}

/// A heap key: a distance, ordered totally (distances are >= 0 up to rounding).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Distance(f64);

impl Eq for Distance {}

impl PartialOrd for Distance {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Distance {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// What a heap entry stands for; at equal distances the smaller kind comes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// A column with a use left: reaching it ends the search.
    Free,
    /// A full column: reaching it reaches its rows.
    Full,
    /// A row's unlisted columns: reaching this distance grows its list.
    Grow,
}

type Event = Reverse<(Distance, Kind, usize)>;

/// Each row's lists and the scratch of one search (reset through the visited lists).
pub struct Lazy {
    /// Each row's columns for the search (they only grow).
    columns: Vec<Columns>,
    dist: Vec<f64>,
    pred: Vec<usize>,
    settled: Vec<bool>,
    row_dist: Vec<f64>,
    touched: Vec<usize>,
    heap: BinaryHeap<Event>,
    visited_cols: Vec<(usize, f64)>,
    visited_rows: Vec<(usize, f64)>,
    /// Entries relaxed and heap events of the last search: its work, in units of one entry
    /// of a dense scan.
    pub work: usize,
    /// Rows the last search reached.
    pub rows_reached: usize,
}

/// What one heap event costs against one entry of a dense scan.
const EVENT_COST: usize = 8;

impl Lazy {
    /// Each row listing its `first` cheapest columns, chosen on all cores.
    pub fn new(d: &DistanceMatrix, first: usize) -> Self {
        let (m, n) = (d.rows, d.cols);
        Lazy {
            columns: (0..m).into_par_iter().map(|i| cheapest(d.row(i), first)).collect(),
            dist: vec![f64::INFINITY; n],
            pred: vec![NONE; n],
            settled: vec![false; n],
            row_dist: vec![0.0; m],
            touched: Vec::new(),
            heap: BinaryHeap::new(),
            visited_cols: Vec::new(),
            visited_rows: Vec::new(),
            work: 0,
            rows_reached: 0,
        }
    }

    fn kind(st: &State, j: usize) -> Kind {
        if st.has_room(j) {
            Kind::Free
        } else {
            Kind::Full
        }
    }

    /// Relaxes column `j` from row `i`, reached at distance `r`.
    fn relax(&mut self, st: &State, i: usize, r: f64, j: usize, dij: f64) {
        if self.settled[j] {
            return;
        }
        let nd = r + dij - st.u[i] - st.v[j];
        if nd < self.dist[j] {
            if self.dist[j] == f64::INFINITY {
                self.touched.push(j);
            }
            self.dist[j] = nd;
            self.pred[j] = i;
            self.heap.push(Reverse((Distance(nd), Self::kind(st, j), j)));
            self.work += EVENT_COST;
        }
    }

    /// Relaxes the listed columns of row `i` from position `from` on (all of them when the
    /// row lists none), and queues the growth of its list.
    fn relax_row(&mut self, st: &State, i: usize, from: usize) {
        let r = self.row_dist[i];
        match std::mem::replace(&mut self.columns[i], Columns::All) {
            Columns::All => {
                self.work += st.d.cols;
                for (j, &dij) in st.d.row(i).iter().enumerate() {
                    self.relax(st, i, r, j, dij);
                }
            }
            Columns::Listed(list) => {
                self.work += list.len() - from;
                for &(dij, j) in &list[from..] {
                    self.relax(st, i, r, j as usize, dij);
                }
                let bound = r + list[list.len() - 1].0 - st.u[i];
                self.heap.push(Reverse((Distance(bound), Kind::Grow, i)));
                self.columns[i] = Columns::Listed(list);
            }
        }
    }

    /// Reaches row `i` at distance `r`.
    fn reach(&mut self, st: &State, i: usize, r: f64) {
        self.visited_rows.push((i, r));
        self.row_dist[i] = r;
        self.relax_row(st, i, 0);
    }

    /// Grows the list of row `i` and relaxes the columns it gains.
    fn grow(&mut self, st: &State, i: usize) {
        let Columns::Listed(list) = &self.columns[i] else { return };
        let had = list.len();
        self.work += st.d.cols;
        self.columns[i] = cheapest(st.d.row(i), had * GROWTH);
        match self.columns[i] {
            Columns::All => self.relax_row(st, i, 0),
            Columns::Listed(_) => self.relax_row(st, i, had),
        }
    }

    /// Assigns the free row `cur` along a shortest augmenting path (reaching a full tile
    /// reaches every row on it); sets [`Lazy::work`].
    pub fn insert(&mut self, st: &mut State, cur: usize) {
        self.work = 0;
        self.reach(st, cur, 0.0);
        let (sink, min_val) = loop {
            let Reverse((Distance(at), kind, x)) = self.heap.pop().expect("a free column is always reachable");
            match kind {
                Kind::Grow => self.grow(st, x),
                _ if self.settled[x] || at != self.dist[x] => {}
                _ => {
                    self.settled[x] = true;
                    self.visited_cols.push((x, at));
                    if st.has_room(x) {
                        break (x, at);
                    }
                    for k in 0..st.rows_of[x].len() {
                        self.reach(st, st.rows_of[x][k], at);
                    }
                }
            }
        };
        st.augment(cur, sink, min_val, &self.visited_rows, &self.visited_cols, |j| self.pred[j]);
        self.rows_reached = self.visited_rows.len();
        for &j in &self.touched {
            self.dist[j] = f64::INFINITY;
            self.settled[j] = false;
        }
        self.touched.clear();
        self.heap.clear();
        self.visited_cols.clear();
        self.visited_rows.clear();
    }
}
