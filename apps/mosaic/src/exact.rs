//! The exact optimum: a Jonker-Volgenant style shortest augmenting path solver for the
//! rectangular assignment problem (m <= n), in f64, that scans only the entries a shortest
//! path can use.
//!
//! Rows are added one at a time; each addition runs Dijkstra over reduced costs
//! d[i][j] - u[i] - v[j] (never negative) until it reaches a free column, then updates the
//! potentials and flips the path. The final potentials are an LP dual certificate: u[i] +
//! v[j] <= d[i][j] everywhere, with equality on the assignment and v[j] = 0 on unused
//! columns, so the assignment is provably optimal (see [`Solution::certify`]).
//!
//! Dijkstra is lazy. Each row keeps its cheapest columns (32 at first, sorted), and only those
//! are relaxed when the row is reached. The columns left out cost at least the list's largest
//! entry t[i], and v <= 0 always, so their reduced costs are at least t[i] - u[i]: the row
//! is reached at distance r, a heap event at r + t[i] - u[i] stands for all of them, and
//! only when the search gets that far is the list grown (4 times longer; past n / 4 the row
//! scans its whole row of D from then on). Every Dijkstra step therefore settles the same
//! distances as a scan of every entry would, and the potentials certify the optimum of the
//! whole matrix; on a photomosaic's matrix (many patches wanting the same few tiles) a run
//! reaches hundreds of rows but reads a few dozen entries of each, where a dense scan
//! (scipy's linear_sum_assignment) reads all n of each. Ties in the heap settle free columns
//! first (the path ends sooner), then columns, then list growths.
//!
//! With `--repeat N` a tile is one node of capacity N (the transportation problem): it is a
//! sink while it has a use left, and reaching a full tile reaches every row on it. One
//! potential per tile; the certificate is checked over [`Slots`] (tile j's uses as slots j,
//! n + j, ... sharing v[j]), where it is the plain assignment certificate. The first lists
//! are chosen on all cores; the searches are sequential and deterministic.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::matrix::{effective_repeat, DistanceMatrix, Slots};

const NONE: usize = usize::MAX;

/// The cheapest columns each row lists at first.
const FIRST_LIST: usize = 32;
/// A list grows by this factor when the search needs the columns it leaves out.
const GROWTH: usize = 4;

/// An optimal assignment with its dual potentials.
#[derive(Clone, Debug)]
pub struct Solution {
    /// The tile of each patch.
    pub assignment: Vec<usize>,
    /// The slot of each patch ([`Slots`]: slot s is a use of tile s mod n).
    pub slots: Vec<usize>,
    /// Row potentials.
    pub u: Vec<f64>,
    /// Slot potentials (<= 0; 0 on unused slots).
    pub v: Vec<f64>,
    /// Uses allowed per tile (the effective repeat: at most one per patch).
    pub repeat: usize,
}

/// Solves the assignment problem exactly; `progress` advances once per row added.
pub fn solve(d: &DistanceMatrix, progress: &ProgressBar) -> Vec<usize> {
    solve_with_duals(d, progress).assignment
}

/// Solves exactly (each tile at most once) and keeps the dual potentials.
pub fn solve_with_duals(d: &DistanceMatrix, progress: &ProgressBar) -> Solution {
    solve_repeat(d, 1, progress)
}

/// Solves exactly with each tile used at most `repeat` times (the caller has checked that
/// m <= n x repeat).
pub fn solve_repeat(d: &DistanceMatrix, repeat: usize, progress: &ProgressBar) -> Solution {
    let mut aug = Augmenter::with_repeat(d, repeat);
    for row in 0..d.rows {
        aug.insert(row);
        progress.inc(1);
    }
    aug.into_solution()
}

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

/// The solver's state between row insertions: potentials and a partial assignment such
/// that u[i] + v[j] <= d[i][j] everywhere, with equality on assigned pairs, v <= 0, and
/// v[j] = 0 on a tile with a use left. [`Augmenter::insert`] adds one row and keeps them.
pub struct Augmenter<'a> {
    d: &'a DistanceMatrix,
    /// Uses per tile (the effective repeat).
    capacity: usize,
    u: Vec<f64>,
    v: Vec<f64>,
    col4row: Vec<usize>,
    /// The rows on each tile.
    rows_of: Vec<Vec<usize>>,
    /// Each row's columns for the search (they only grow).
    columns: Vec<Columns>,
    // Scratch of one search, reset through the visited lists.
    dist: Vec<f64>,
    pred: Vec<usize>,
    settled: Vec<bool>,
    row_dist: Vec<f64>,
    touched: Vec<usize>,
    heap: BinaryHeap<Event>,
    visited_cols: Vec<usize>,
    visited_rows: Vec<usize>,
}

impl<'a> Augmenter<'a> {
    /// No row assigned yet, every potential 0; each tile may serve `repeat` rows. The rows'
    /// first lists are chosen on all cores.
    pub fn with_repeat(d: &'a DistanceMatrix, repeat: usize) -> Self {
        Self::with_lists(d, repeat, FIRST_LIST)
    }

    /// As [`Augmenter::with_repeat`], each row listing its `first` cheapest columns at first.
    fn with_lists(d: &'a DistanceMatrix, repeat: usize, first: usize) -> Self {
        let capacity = effective_repeat(repeat, d.rows);
        let (m, n) = (d.rows, d.cols);
        let columns = (0..m).into_par_iter().map(|i| cheapest(d.row(i), first)).collect();
        Augmenter {
            d,
            capacity,
            u: vec![0.0; m],
            v: vec![0.0; n],
            col4row: vec![NONE; m],
            rows_of: vec![Vec::new(); n],
            columns,
            dist: vec![f64::INFINITY; n],
            pred: vec![NONE; n],
            settled: vec![false; n],
            row_dist: vec![0.0; m],
            touched: Vec::new(),
            heap: BinaryHeap::new(),
            visited_cols: Vec::new(),
            visited_rows: Vec::new(),
        }
    }

    fn kind(&self, j: usize) -> Kind {
        if self.rows_of[j].len() < self.capacity {
            Kind::Free
        } else {
            Kind::Full
        }
    }

    /// Relaxes column `j` from row `i`, reached at distance `r`.
    fn relax(&mut self, i: usize, r: f64, j: usize, dij: f64) {
        if self.settled[j] {
            return;
        }
        let nd = r + dij - self.u[i] - self.v[j];
        if nd < self.dist[j] {
            if self.dist[j] == f64::INFINITY {
                self.touched.push(j);
            }
            self.dist[j] = nd;
            self.pred[j] = i;
            self.heap.push(Reverse((Distance(nd), self.kind(j), j)));
        }
    }

    /// Relaxes the listed columns of row `i` from position `from` on (all of them when the
    /// row lists none), and queues the growth of its list.
    fn relax_row(&mut self, i: usize, from: usize) {
        let r = self.row_dist[i];
        let d = self.d;
        match std::mem::replace(&mut self.columns[i], Columns::All) {
            Columns::All => {
                for (j, &dij) in d.row(i).iter().enumerate() {
                    self.relax(i, r, j, dij);
                }
            }
            Columns::Listed(list) => {
                for &(dij, j) in &list[from..] {
                    self.relax(i, r, j as usize, dij);
                }
                let bound = r + list[list.len() - 1].0 - self.u[i];
                self.heap.push(Reverse((Distance(bound), Kind::Grow, i)));
                self.columns[i] = Columns::Listed(list);
            }
        }
    }

    /// Reaches row `i` at distance `r`.
    fn reach(&mut self, i: usize, r: f64) {
        self.visited_rows.push(i);
        self.row_dist[i] = r;
        self.relax_row(i, 0);
    }

    /// Grows the list of row `i` and relaxes the columns it gains.
    fn grow(&mut self, i: usize) {
        let Columns::Listed(list) = &self.columns[i] else { return };
        let had = list.len();
        self.columns[i] = cheapest(self.d.row(i), had * GROWTH);
        match self.columns[i] {
            Columns::All => self.relax_row(i, 0),
            Columns::Listed(_) => self.relax_row(i, had),
        }
    }

    /// Assigns the free row `cur` along a shortest augmenting path (Dijkstra over reduced
    /// costs; reaching a full tile visits every row on it), then updates the potentials and
    /// moves each row of the path to the next tile.
    pub fn insert(&mut self, cur: usize) {
        self.reach(cur, 0.0);
        let (sink, min_val) = loop {
            let Reverse((Distance(at), kind, x)) = self.heap.pop().expect("a free column is always reachable");
            match kind {
                Kind::Grow => self.grow(x),
                _ if self.settled[x] || at != self.dist[x] => {}
                _ => {
                    self.settled[x] = true;
                    self.visited_cols.push(x);
                    if self.rows_of[x].len() < self.capacity {
                        break (x, at);
                    }
                    for k in 0..self.rows_of[x].len() {
                        self.reach(self.rows_of[x][k], at);
                    }
                }
            }
        };
        for &r in &self.visited_rows {
            self.u[r] += min_val - self.row_dist[r];
        }
        for &j in &self.visited_cols {
            self.v[j] -= min_val - self.dist[j];
        }
        let mut j = sink;
        loop {
            let r = self.pred[j];
            let previous = std::mem::replace(&mut self.col4row[r], j);
            self.rows_of[j].push(r);
            if r == cur {
                break;
            }
            let on = &mut self.rows_of[previous];
            on.swap_remove(on.iter().position(|&x| x == r).expect("a row is on its tile"));
            j = previous;
        }
        for &j in &self.touched {
            self.dist[j] = f64::INFINITY;
            self.settled[j] = false;
        }
        self.touched.clear();
        self.heap.clear();
        self.visited_cols.clear();
        self.visited_rows.clear();
    }

    /// The assignment and potentials (every row must have been inserted), with each tile's
    /// uses as slots ([`Slots`]) sharing the tile's potential.
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

impl Solution {
    /// Checks the dual certificate within `tol` (absolute, in units of D): reduced costs
    /// non-negative, zero on the assignment, v <= 0 and v = 0 on unused columns. Returns the
    /// duality gap (primal cost minus dual objective), which is ~0 for an optimum.
    pub fn certify(&self, d: &DistanceMatrix, tol: f64) -> Result<f64, String> {
        let slots = Slots::new(d, self.repeat);
        let mut used = vec![false; slots.count];
        for (i, &j) in self.slots.iter().enumerate() {
            used[j] = true;
            if slots.tile(j) != self.assignment[i] {
                return Err(format!("patch {i} has slot {j} but tile {}", self.assignment[i]));
            }
            let r = slots.at(i, j) - self.u[i] - self.v[j];
            if r.abs() > tol {
                return Err(format!("reduced cost {r} on assigned ({i}, slot {j})"));
            }
        }
        for i in 0..d.rows {
            for j in 0..slots.count {
                let r = slots.at(i, j) - self.u[i] - self.v[j];
                if r < -tol {
                    return Err(format!("negative reduced cost {r} at ({i}, slot {j})"));
                }
            }
        }
        for (j, &vj) in self.v.iter().enumerate() {
            if vj > tol || (!used[j] && vj.abs() > tol) {
                return Err(format!("column potential {vj} at {j} (used: {})", used[j]));
            }
        }
        let dual: f64 = self.u.iter().sum::<f64>() + self.v.iter().sum::<f64>();
        Ok(d.cost(&self.assignment) - dual)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Optimum by enumerating every map of patches to tiles that uses no tile more than
    /// `repeat` times (independent of the solver and of its slots).
    fn brute_force(d: &DistanceMatrix, repeat: usize) -> f64 {
        fn go(d: &DistanceMatrix, repeat: usize, i: usize, uses: &mut Vec<usize>, acc: f64, best: &mut f64) {
            if i == d.rows {
                *best = best.min(acc);
                return;
            }
            for j in 0..d.cols {
                if uses[j] < repeat {
                    uses[j] += 1;
                    go(d, repeat, i + 1, uses, acc + d.at(i, j), best);
                    uses[j] -= 1;
                }
            }
        }
        let mut best = f64::INFINITY;
        go(d, repeat, 0, &mut vec![0; d.cols], 0.0, &mut best);
        best
    }

    fn random(m: usize, n: usize, levels: u32, rng: &mut rand_chacha::ChaCha8Rng) -> DistanceMatrix {
        // Few distinct levels make many ties.
        DistanceMatrix::new(m, n, (0..m * n).map(|_| rng.gen_range(0..levels) as f64 * 0.5).collect()).unwrap()
    }

    #[test]
    fn matches_brute_force_on_tiny_cases_with_ties() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for _ in 0..300 {
            let m = rng.gen_range(1..=6);
            let n = rng.gen_range(m..=8);
            let d = random(m, n, if rng.gen() { 3 } else { 1000 }, &mut rng);
            let s = solve_with_duals(&d, &ProgressBar::hidden());
            d.check_assignment(&s.assignment).unwrap();
            let want = brute_force(&d, 1);
            assert!(
                (d.cost(&s.assignment) - want).abs() <= 1e-9 * want.max(1.0),
                "{m}x{n}: {} vs {want}",
                d.cost(&s.assignment)
            );
        }
    }

    #[test]
    fn dual_certificate_proves_optimality() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(10);
        let cases = [
            random(40, 90, 1_000_000, &mut rng),
            random(50, 50, 4, &mut rng),
            random(1, 30, 100, &mut rng),
            DistanceMatrix::new(3, 3, vec![0.0; 9]).unwrap(),
            crate::bench::matrix(60, 200, 4),
        ];
        for d in cases {
            for repeat in [1, 3] {
                let s = solve_repeat(&d, repeat, &ProgressBar::hidden());
                d.check_uses(&s.assignment, repeat).unwrap();
                let gap = s.certify(&d, 1e-9 * d.mean().max(1.0)).unwrap();
                let cost = d.cost(&s.assignment);
                assert!(gap.abs() <= 1e-9 * cost.max(1.0), "{}x{} x{repeat}: duality gap {gap}", d.rows, d.cols);
            }
        }
    }

    #[test]
    fn repeats_match_brute_force_and_one_repeat_is_the_plain_problem() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for _ in 0..300 {
            let repeat = rng.gen_range(1..=3);
            let n = rng.gen_range(1..=4);
            let m = rng.gen_range(1..=(n * repeat).min(6));
            let d = random(m, n, if rng.gen() { 3 } else { 1000 }, &mut rng);
            let s = solve_repeat(&d, repeat, &ProgressBar::hidden());
            d.check_uses(&s.assignment, repeat).unwrap();
            let want = brute_force(&d, repeat);
            let got = d.cost(&s.assignment);
            assert!((got - want).abs() <= 1e-9 * want.max(1.0), "{m}x{n} x{repeat}: {got} vs {want}");
            s.certify(&d, 1e-9 * d.mean().max(1.0)).unwrap();
            if m <= n {
                let plain = solve_with_duals(&d, &ProgressBar::hidden());
                let once = solve_repeat(&d, 1, &ProgressBar::hidden());
                assert_eq!(plain.assignment, once.assignment);
                assert!((d.cost(&plain.assignment) - brute_force(&d, 1)).abs() <= 1e-9 * got.max(1.0));
            }
        }
        // As many uses as patches: every patch takes its own best tile.
        let d = random(7, 3, 1000, &mut rng);
        let free: f64 = (0..7).map(|i| d.row(i).iter().copied().fold(f64::INFINITY, f64::min)).sum();
        assert_eq!(d.cost(&solve_repeat(&d, 100, &ProgressBar::hidden()).assignment), free);
    }

    /// Solves with lists of `first` columns at first, every row inserted.
    fn solve_lists(d: &DistanceMatrix, repeat: usize, first: usize) -> Solution {
        let mut aug = Augmenter::with_lists(d, repeat, first);
        (0..d.rows).for_each(|i| aug.insert(i));
        aug.into_solution()
    }

    #[test]
    fn short_lists_grow_to_the_optimum() {
        // Lists of 1 or 2 columns grow on almost every search (to the whole row past n / 4):
        // the optimum is still the brute force's, and certified.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
        for _ in 0..300 {
            let repeat = rng.gen_range(1..=2);
            let n = rng.gen_range(4..=9);
            let m = rng.gen_range(1..=(n * repeat).min(6));
            let d = random(m, n, if rng.gen() { 3 } else { 1000 }, &mut rng);
            let s = solve_lists(&d, repeat, rng.gen_range(1..=2));
            let (got, want) = (d.cost(&s.assignment), brute_force(&d, repeat));
            assert!((got - want).abs() <= 1e-9 * want.max(1.0), "{m}x{n} x{repeat}: {got} vs {want}");
            s.certify(&d, 1e-9 * d.mean().max(1.0)).unwrap();
        }
    }

    #[test]
    fn rows_wanting_the_same_tiles_are_certified() {
        // Every row likes the same few columns (as a photo's sky likes the same tiles): the
        // searches reach many rows and grow their lists; the certificate checks every entry.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
        let (m, n) = (150, 700);
        let base: Vec<f64> = (0..n).map(|_| rng.gen_range(0.0..100.0)).collect();
        let data = (0..m * n).map(|k| base[k % n] + rng.gen_range(0.0..1.0)).collect();
        let d = DistanceMatrix::new(m, n, data).unwrap();
        for repeat in [1, 2] {
            for first in [FIRST_LIST, 4] {
                let s = solve_lists(&d, repeat, first);
                d.check_uses(&s.assignment, repeat).unwrap();
                let gap = s.certify(&d, 1e-9 * d.mean()).unwrap();
                assert!(gap.abs() <= 1e-9 * d.cost(&s.assignment), "x{repeat}, lists of {first}: gap {gap}");
            }
        }
    }

    #[test]
    fn single_row_takes_its_minimum() {
        let d = DistanceMatrix::new(1, 4, vec![3.0, 1.0, 2.0, 1.0]).unwrap();
        assert_eq!(d.cost(&solve(&d, &ProgressBar::hidden())), 1.0);
    }
}
