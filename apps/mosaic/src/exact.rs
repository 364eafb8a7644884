//! The exact optimum: a Jonker-Volgenant style shortest augmenting path solver for the
//! rectangular assignment problem (m <= n), in f64, O(m^2 n) in the worst case.
//!
//! Rows are added one at a time; each addition runs Dijkstra over reduced costs
//! d[i][j] - u[i] - v[j] (never negative) until it reaches a free column, then updates the
//! potentials and flips the path. The final potentials are an LP dual certificate: u[i] +
//! v[j] <= d[i][j] everywhere, with equality on the assignment and v[j] = 0 on unused
//! columns, so the assignment is provably optimal (see [`Solution::certify`]).
//!
//! With `--repeat N` a tile is one node of capacity N (the transportation problem): it is a
//! sink while it has a use left, and reaching a full tile reaches every row on it. One
//! potential per tile; the certificate is checked over [`Slots`] (tile j's uses as slots j,
//! n + j, ... sharing v[j]), where it is the plain assignment certificate. A Dijkstra step
//! over many tiles (4096 and more) is split over all cores; the closest tile is chosen by
//! the same rule as the sequential scan, so results are bit-identical.

use indicatif::ProgressBar;
use rayon::prelude::*;

use crate::matrix::{effective_repeat, DistanceMatrix, Slots};

const NONE: usize = usize::MAX;

/// Unvisited slots from which a Dijkstra step runs on all cores: shorter scans cost less
/// than handing out the work.
const PARALLEL_FROM: usize = 4096;
/// The fewest slots one task of a parallel scan takes.
const MIN_CHUNK: usize = 2048;

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

/// The unvisited tiles of one Dijkstra run, compacted in parallel arrays so a scan reads
/// them contiguously and gathers only the cost row.
#[derive(Default)]
struct Unvisited {
    tile: Vec<usize>,
    v: Vec<f64>,
    dist: Vec<f64>,
    path: Vec<usize>,
    free: Vec<bool>,
}

/// The closest tile of a scan: (distance, position, free). Ties prefer a tile with a use
/// left (the path ends sooner), the last such one, else the first one.
type Closest = (f64, usize, bool);

/// The closest of two scans of consecutive ranges, `a` before `b`, by the rule of a
/// sequential scan over both (associative, so any split gives the same answer).
fn closer(a: Closest, b: Closest) -> Closest {
    if b.0 < a.0 || (b.0 == a.0 && b.2) {
        b
    } else {
        a
    }
}

impl Unvisited {
    fn reset(&mut self, v: &[f64], free: impl Iterator<Item = bool>) {
        let n = v.len();
        self.tile.clear();
        self.tile.extend(0..n);
        self.v.clear();
        self.v.extend_from_slice(v);
        self.dist.clear();
        self.dist.resize(n, f64::INFINITY);
        self.path.clear();
        self.path.resize(n, NONE);
        self.free.clear();
        self.free.extend(free);
    }

    /// Relaxes the tiles at positions `offset..` (the chunks `dist` and `path`) from row `i`
    /// (`base` = min_val - u[i]) and returns the closest of them.
    fn scan_range(
        &self,
        offset: usize,
        dist: &mut [f64],
        path: &mut [usize],
        row: &[f64],
        base: f64,
        i: usize,
    ) -> Closest {
        let end = offset + dist.len();
        let (tile, v, free) = (&self.tile[offset..end], &self.v[offset..end], &self.free[offset..end]);
        let mut best: Closest = (f64::INFINITY, NONE, false);
        for it in 0..dist.len() {
            let r = base + row[tile[it]] - v[it];
            if r < dist[it] {
                path[it] = i;
                dist[it] = r;
            }
            let s = dist[it];
            if s < best.0 || (s == best.0 && free[it]) {
                best = (s, offset + it, free[it]);
            }
        }
        best
    }

    /// One Dijkstra step from row `i`: relaxes every unvisited tile and returns the position
    /// of the closest. Long scans are split over all cores; the result is the same.
    fn scan(&mut self, row: &[f64], base: f64, i: usize) -> usize {
        let len = self.dist.len();
        let mut dist = std::mem::take(&mut self.dist);
        let mut path = std::mem::take(&mut self.path);
        let best = if len >= PARALLEL_FROM {
            let chunk = len.div_ceil(rayon::current_num_threads()).max(MIN_CHUNK);
            dist.par_chunks_mut(chunk)
                .zip(path.par_chunks_mut(chunk))
                .enumerate()
                .map(|(c, (dist, path))| self.scan_range(c * chunk, dist, path, row, base, i))
                .reduce(|| (f64::INFINITY, NONE, false), closer)
        } else {
            self.scan_range(0, &mut dist, &mut path, row, base, i)
        };
        self.dist = dist;
        self.path = path;
        best.1
    }

    /// Removes position `at`, returning its (tile, distance, predecessor).
    fn take(&mut self, at: usize) -> (usize, f64, usize) {
        self.v.swap_remove(at);
        self.free.swap_remove(at);
        (self.tile.swap_remove(at), self.dist.swap_remove(at), self.path.swap_remove(at))
    }
}

/// Solves exactly with each tile used at most `repeat` times (the caller has checked that
/// m <= n x repeat): shortest augmenting paths in which a tile is one node of capacity
/// `repeat` (a transportation problem), so D is never copied and a Dijkstra step scans n
/// tiles, not n x repeat copies.
pub fn solve_repeat(d: &DistanceMatrix, repeat: usize, progress: &ProgressBar) -> Solution {
    let mut aug = Augmenter::with_repeat(d, repeat);
    for row in 0..d.rows {
        aug.insert(row);
        progress.inc(1);
    }
    aug.into_solution()
}

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
    shortest: Vec<f64>,
    path: Vec<usize>,
    rem: Unvisited,
    visited_cols: Vec<usize>,
    visited_rows: Vec<usize>,
}

impl<'a> Augmenter<'a> {
    /// No row assigned yet, every potential 0; each tile may serve `repeat` rows.
    pub fn with_repeat(d: &'a DistanceMatrix, repeat: usize) -> Self {
        let capacity = effective_repeat(repeat, d.rows);
        Self::from_parts(d, capacity, vec![0.0; d.rows], vec![0.0; d.cols], vec![NONE; d.rows])
    }

    /// A warm start without repeats: potentials `u` (per row) and `v` (per column) and the
    /// columns of the assigned rows (`usize::MAX` for a free row), which must meet the
    /// invariants above.
    pub fn new(d: &'a DistanceMatrix, u: Vec<f64>, v: Vec<f64>, col4row: Vec<usize>) -> Self {
        Self::from_parts(d, 1, u, v, col4row)
    }

    fn from_parts(d: &'a DistanceMatrix, capacity: usize, u: Vec<f64>, v: Vec<f64>, col4row: Vec<usize>) -> Self {
        let (m, n) = (d.rows, d.cols);
        let mut rows_of = vec![Vec::new(); n];
        for (i, &j) in col4row.iter().enumerate() {
            if j != NONE {
                rows_of[j].push(i);
            }
        }
        Augmenter {
            d,
            capacity,
            u,
            v,
            col4row,
            rows_of,
            shortest: vec![0.0; n],
            path: vec![NONE; n],
            rem: Unvisited::default(),
            visited_cols: Vec::with_capacity(m + 1),
            visited_rows: Vec::with_capacity(m),
        }
    }

    /// Assigns the free row `cur` along a shortest augmenting path (Dijkstra over reduced
    /// costs; reaching a full tile visits every row on it), then updates the potentials and
    /// moves each row of the path to the next tile.
    pub fn insert(&mut self, cur: usize) {
        let d = self.d;
        let capacity = self.capacity;
        self.rem.reset(&self.v, self.rows_of.iter().map(|rows| rows.len() < capacity));
        self.visited_cols.clear();
        self.visited_rows.clear();
        let mut min_val = 0.0f64;
        let mut rows = vec![cur];
        let sink = loop {
            let mut at = NONE;
            for &i in &rows {
                self.visited_rows.push(i);
                at = self.rem.scan(d.row(i), min_val - self.u[i], i);
            }
            let (j, dist, pred) = self.rem.take(at);
            min_val = dist;
            self.shortest[j] = dist;
            self.path[j] = pred;
            self.visited_cols.push(j);
            if self.rows_of[j].len() < capacity {
                break j;
            }
            rows.clone_from(&self.rows_of[j]);
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

    #[test]
    fn parallel_scans_are_bit_identical_to_sequential_ones() {
        // 4500 tiles: over the parallel threshold, split into 2 or 3 chunks.
        let d = crate::bench::matrix(40, 4500, 6);
        for repeat in [1, 2] {
            let run = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| solve_repeat(&d, repeat, &ProgressBar::hidden()))
            };
            let one = run(1);
            for threads in [2, 4] {
                let many = run(threads);
                assert_eq!(one.slots, many.slots);
                assert!(one.u.iter().zip(&many.u).all(|(a, b)| a.to_bits() == b.to_bits()));
                assert!(one.v.iter().zip(&many.v).all(|(a, b)| a.to_bits() == b.to_bits()));
            }
        }
    }

    #[test]
    fn single_row_takes_its_minimum() {
        let d = DistanceMatrix::new(1, 4, vec![3.0, 1.0, 2.0, 1.0]).unwrap();
        assert_eq!(d.cost(&solve(&d, &ProgressBar::hidden())), 1.0);
    }
}
