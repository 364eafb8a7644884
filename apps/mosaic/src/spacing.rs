//! `--min-distance D`: the same tile never twice within Chebyshev distance D cells.
//!
//! Two cells of a cols x rows grid conflict when |dx| <= D and |dy| <= D. The cells that
//! share a tile must be pairwise apart, so every (D+1) x (D+1) window of the grid (clipped to
//! it) shows each tile at most once; the windows are the conflict graph's maximal cliques,
//! and "at most once per window" is the rule itself, not a weaker one.
//!
//! - [`Spacing::repair`] makes any assignment hold the rule: the best-matching cells keep
//!   their tiles, the others move to their cheapest allowed tile, then every cell moves to a
//!   cheaper allowed tile while one exists. Greedy and SoftAssign pass their result through
//!   it (they are heuristics either way); the annealing never proposes a move that breaks it.
//! - [`solve_exact`]: the exact method under the rule. The problem is an assignment with
//!   conflict constraints (NP-hard in general), so it is solved by Lagrangian relaxation:
//!   each violated window-and-tile constraint gets a multiplier added to the cost of its
//!   cells, every relaxed problem is solved exactly ([`crate::exact`]), its optimum minus the
//!   multipliers is a lower bound on the constrained optimum, and its repair an upper bound.
//!   The result is optimal, and said to be, only when the two meet; otherwise it is a
//!   heuristic whose gap to the best lower bound is reported. Multipliers are kept in
//!   window order, so the sums of penalties, and the result, are the same on every run.

use std::collections::BTreeMap;

use crate::error::{MosaicError, Result};
use crate::exact;
use crate::matrix::{effective_repeat, DistanceMatrix};

const NONE: usize = usize::MAX;

/// Subgradient iterations of the exact method at most.
pub const MAX_ROUNDS: usize = 400;
/// The search stops when the lower bound rose by less than this fraction of the gap over
/// the last [`STALL_ROUNDS`] rounds.
const STALL: f64 = 0.01;
const STALL_ROUNDS: usize = 40;
/// Rounds without a better lower bound after which the step is halved.
const PATIENCE: usize = 4;
/// Relative gap below which the upper and lower bounds are taken to meet (rounding of f64
/// sums over the cells).
pub const CERTIFIED_GAP: f64 = 1e-9;

/// The rule on a grid: cells are row-major, `cols` per row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spacing {
    pub cols: usize,
    pub rows: usize,
    /// D: cells at Chebyshev distance D or less never show the same tile.
    pub distance: usize,
}

/// The result of [`solve_exact`].
#[derive(Clone, Debug)]
pub struct Constrained {
    pub assignment: Vec<usize>,
    /// The best Lagrangian lower bound on the constrained optimum.
    pub lower_bound: f64,
}

impl Spacing {
    /// The cells within distance D of `cell`, itself excluded.
    pub fn neighbours(&self, cell: usize) -> impl Iterator<Item = usize> + '_ {
        let (x, y) = (cell % self.cols, cell / self.cols);
        let (x0, x1) = (x.saturating_sub(self.distance), (x + self.distance).min(self.cols - 1));
        let (y0, y1) = (y.saturating_sub(self.distance), (y + self.distance).min(self.rows - 1));
        (y0..=y1).flat_map(move |yy| (x0..=x1).map(move |xx| yy * self.cols + xx)).filter(move |&k| k != cell)
    }

    /// The side of a window: the largest set of pairwise conflicting cells is a
    /// `window().0 x window().1` block.
    fn window(&self) -> (usize, usize) {
        ((self.distance + 1).min(self.cols), (self.distance + 1).min(self.rows))
    }

    /// Refuses a rule that does not fit the problem: a grid of another number of cells than
    /// the patches, or fewer tiles than one window's cells (each needs its own).
    pub fn check_fits(&self, patches: usize, tiles: usize) -> Result<()> {
        if self.cols.checked_mul(self.rows) != Some(patches) {
            return Err(MosaicError::GridMismatch { cols: self.cols, rows: self.rows, patches });
        }
        let (w, h) = self.window();
        if tiles < w * h {
            return Err(MosaicError::SpacingInfeasible { distance: self.distance, tiles, needed: w * h });
        }
        Ok(())
    }

    /// The first pair of cells (a < b) that show the same tile within the distance.
    pub fn violation(&self, assignment: &[usize]) -> Option<(usize, usize)> {
        (0..assignment.len())
            .find_map(|a| self.neighbours(a).find(|&b| b > a && assignment[b] == assignment[a]).map(|b| (a, b)))
    }

    /// Checks that `assignment` holds the rule.
    pub fn check(&self, assignment: &[usize]) -> Result<()> {
        match self.violation(assignment) {
            None => Ok(()),
            Some((a, b)) => Err(MosaicError::SpacingViolated {
                tile: assignment[a],
                a: (a % self.cols, a / self.cols),
                b: (b % self.cols, b / self.cols),
                distance: self.distance,
            }),
        }
    }

    /// Whether `cell` may show `tile` while `tiles` holds the others' (NONE: no tile yet).
    fn allows(&self, tiles: &[usize], cell: usize, tile: usize) -> bool {
        self.neighbours(cell).all(|k| tiles[k] != tile)
    }

    /// Whether `cell` may show `tile` with cell `except` ignored (it is moving too); the
    /// annealing's test for a swap.
    pub fn allows_except(&self, tile_of: impl Fn(usize) -> usize, cell: usize, tile: usize, except: usize) -> bool {
        self.neighbours(cell).all(|k| k == except || tile_of(k) != tile)
    }

    /// The cheapest tile `cell` may show: allowed by the rule and with a use left
    /// (`uses[j] < repeat`), or its own tile `own`.
    fn cheapest_allowed(
        &self,
        d: &DistanceMatrix,
        tiles: &[usize],
        uses: &[usize],
        repeat: usize,
        cell: usize,
        own: usize,
    ) -> usize {
        let mut banned: Vec<usize> = self.neighbours(cell).map(|k| tiles[k]).filter(|&t| t != NONE).collect();
        banned.sort_unstable();
        let mut best = (NONE, f64::INFINITY);
        for (j, &x) in d.row(cell).iter().enumerate() {
            if x < best.1 && (j == own || uses[j] < repeat) && banned.binary_search(&j).is_err() {
                best = (j, x);
            }
        }
        best.0
    }

    /// An assignment that holds the rule and uses no tile more than `repeat` times, from one
    /// that may break the rule (not the repeat): cells keep their tiles best match first,
    /// the others take their cheapest allowed tile; where one is left without any, the start
    /// is the periodic assignment instead. Then each cell moves to a cheaper allowed tile
    /// while one exists. An error when neither start exists (too few tiles for the distance
    /// and the repeat).
    pub fn repair(&self, d: &DistanceMatrix, assignment: &[usize], repeat: usize) -> Result<Vec<usize>> {
        let repeat = effective_repeat(repeat, d.rows);
        let mut tiles = match self.keep_and_fill(d, assignment, repeat) {
            Ok(tiles) => tiles,
            Err(cell) => self.periodic(d, repeat)?.ok_or(MosaicError::SpacingStuck {
                cell: (cell % self.cols, cell / self.cols),
                distance: self.distance,
                tiles: d.cols,
            })?,
        };
        self.improve(d, &mut tiles, repeat);
        Ok(tiles)
    }

    /// Cells keep their tiles best match first; the others take their cheapest allowed tile.
    /// Err: the first cell left without one.
    fn keep_and_fill(&self, d: &DistanceMatrix, assignment: &[usize], repeat: usize) -> Result<Vec<usize>, usize> {
        let mut order: Vec<usize> = (0..d.rows).collect();
        order.sort_by(|&a, &b| d.at(a, assignment[a]).total_cmp(&d.at(b, assignment[b])).then(a.cmp(&b)));
        let mut tiles = vec![NONE; d.rows];
        let mut uses = vec![0usize; d.cols];
        let mut displaced = Vec::new();
        for &i in &order {
            let j = assignment[i];
            if uses[j] < repeat && self.allows(&tiles, i, j) {
                tiles[i] = j;
                uses[j] += 1;
            } else {
                displaced.push(i);
            }
        }
        for &i in &displaced {
            let j = self.cheapest_allowed(d, &tiles, &uses, repeat, i, NONE);
            if j == NONE {
                return Err(i);
            }
            tiles[i] = j;
            uses[j] += 1;
        }
        Ok(tiles)
    }

    /// The periodic assignment: cells whose columns and rows agree modulo the window's sides
    /// form a class whose cells are pairwise more than D apart; each class takes its own
    /// tile, the classes' tiles chosen optimally (an assignment of classes to tiles, the cost
    /// of a class the sum over its cells). None when a class has more cells than `repeat`.
    fn periodic(&self, d: &DistanceMatrix, repeat: usize) -> Result<Option<Vec<usize>>> {
        let (w, h) = self.window();
        let class = |i: usize| (i % self.cols) % w + w * ((i / self.cols) % h);
        let mut sizes = vec![0usize; w * h];
        (0..d.rows).for_each(|i| sizes[class(i)] += 1);
        if sizes.iter().any(|&s| s > repeat) {
            return Ok(None);
        }
        let mut costs = vec![0.0; w * h * d.cols];
        for i in 0..d.rows {
            let c = class(i);
            costs[c * d.cols..(c + 1) * d.cols].iter_mut().zip(d.row(i)).for_each(|(a, &x)| *a += x);
        }
        let classes = DistanceMatrix::new(w * h, d.cols, costs)?;
        let tile_of = exact::solve(&classes, &indicatif::ProgressBar::hidden());
        Ok(Some((0..d.rows).map(|i| tile_of[class(i)]).collect()))
    }

    /// Moves each cell to a cheaper allowed tile while one exists; each move lowers the cost,
    /// so the loop ends.
    fn improve(&self, d: &DistanceMatrix, tiles: &mut [usize], repeat: usize) {
        let mut uses = vec![0usize; d.cols];
        tiles.iter().for_each(|&j| uses[j] += 1);
        let mut moved = true;
        while moved {
            moved = false;
            for i in 0..d.rows {
                let own = tiles[i];
                let j = self.cheapest_allowed(d, tiles, &uses, repeat, i, own);
                if j != own && d.at(i, j) < d.at(i, own) {
                    uses[own] -= 1;
                    uses[j] += 1;
                    tiles[i] = j;
                    moved = true;
                }
            }
        }
    }

    /// The windows (top-left corners, row-major) that contain `cell`.
    fn windows_of(&self, cell: usize) -> impl Iterator<Item = usize> + '_ {
        let (w, h) = self.window();
        let (wx, wy) = (self.cols - w + 1, self.rows - h + 1);
        let (x, y) = (cell % self.cols, cell / self.cols);
        let (x0, x1) = ((x + 1).saturating_sub(w), x.min(wx - 1));
        let (y0, y1) = ((y + 1).saturating_sub(h), y.min(wy - 1));
        (y0..=y1).flat_map(move |yy| (x0..=x1).map(move |xx| yy * wx + xx))
    }

    /// The cells of window `window`.
    fn cells_of(&self, window: usize) -> impl Iterator<Item = usize> + '_ {
        let (w, h) = self.window();
        let wx = self.cols - w + 1;
        let (x0, y0) = (window % wx, window / wx);
        (y0..y0 + h).flat_map(move |y| (x0..x0 + w).map(move |x| y * self.cols + x))
    }

    /// How often each (window, tile) pair is used by `assignment`, counting only pairs used
    /// twice or more or in `keep`.
    fn window_uses(
        &self,
        assignment: &[usize],
        keep: &BTreeMap<(usize, usize), f64>,
    ) -> BTreeMap<(usize, usize), usize> {
        let mut count: BTreeMap<(usize, usize), usize> = keep.keys().map(|&k| (k, 0)).collect();
        let mut seen: BTreeMap<(usize, usize), usize> = BTreeMap::new();
        for (i, &j) in assignment.iter().enumerate() {
            for w in self.windows_of(i) {
                *seen.entry((w, j)).or_insert(0) += 1;
            }
        }
        for (k, c) in seen {
            if c > 1 || keep.contains_key(&k) {
                count.insert(k, c);
            }
        }
        count
    }
}

/// The exact method under the rule (see the module's notes): the best assignment found, which
/// holds the rule and the repeat, with the best lower bound on the constrained optimum.
/// `progress` is called after each round with the round and the two bounds.
pub fn solve_exact(
    d: &DistanceMatrix,
    spacing: &Spacing,
    repeat: usize,
    mut progress: impl FnMut(usize, f64, f64),
) -> Result<Constrained> {
    let hidden = indicatif::ProgressBar::hidden();
    let mut multipliers: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    let mut penalised = d.clone();
    let (mut lower, mut best): (f64, Option<(f64, Vec<usize>)>) = (f64::NEG_INFINITY, None);
    let mut step = 1.0;
    let mut stale = 0;
    let mut history = Vec::new();
    for round in 0..MAX_ROUNDS {
        let relaxed = exact::solve_repeat(&penalised, repeat, &hidden).assignment;
        let bound = penalised.cost(&relaxed) - multipliers.values().sum::<f64>();
        if bound > lower {
            lower = bound;
            stale = 0;
        } else {
            stale += 1;
            if stale >= PATIENCE {
                step /= 2.0;
                stale = 0;
            }
        }
        let repaired = spacing.repair(d, &relaxed, repeat)?;
        let cost = d.cost(&repaired);
        if best.as_ref().is_none_or(|b| cost < b.0) {
            best = Some((cost, repaired));
        }
        let upper = best.as_ref().map_or(f64::INFINITY, |b| b.0);
        progress(round, lower, upper);
        if upper - lower <= CERTIFIED_GAP * upper.abs().max(1.0) {
            break;
        }
        history.push(lower);
        if round >= STALL_ROUNDS && lower - history[round - STALL_ROUNDS] < STALL * (upper - lower) {
            break;
        }
        // Subgradient of each constraint "window w shows tile j at most once": uses - 1.
        let uses = spacing.window_uses(&relaxed, &multipliers);
        let norm: f64 = uses.values().map(|&c| (c as f64 - 1.0).powi(2)).sum();
        if norm == 0.0 {
            break;
        }
        let t = step * (upper - lower) / norm;
        for (&(w, j), &c) in &uses {
            let old = multipliers.get(&(w, j)).copied().unwrap_or(0.0);
            let new = (old + t * (c as f64 - 1.0)).max(0.0);
            let change = new - old;
            if change != 0.0 {
                for i in spacing.cells_of(w) {
                    penalised.data[i * d.cols + j] += change;
                }
            }
            if new > 0.0 {
                multipliers.insert((w, j), new);
            } else {
                multipliers.remove(&(w, j));
            }
        }
    }
    let (cost, assignment) = best.expect("one round ran");
    Ok(Constrained { assignment, lower_bound: lower.min(cost) })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Every pair of cells, by their coordinates: no tile twice within the distance.
    pub(crate) fn holds_every_pair(s: &Spacing, assignment: &[usize]) -> bool {
        let n = assignment.len();
        (0..n).all(|a| {
            (a + 1..n).all(|b| {
                let (ax, ay, bx, by) = (a % s.cols, a / s.cols, b % s.cols, b / s.cols);
                let far = ax.abs_diff(bx).max(ay.abs_diff(by)) > s.distance;
                far || assignment[a] != assignment[b]
            })
        })
    }

    /// The constrained optimum by enumeration (tiny cases).
    fn brute_force(d: &DistanceMatrix, s: &Spacing, repeat: usize) -> f64 {
        fn go(
            d: &DistanceMatrix,
            s: &Spacing,
            repeat: usize,
            a: &mut Vec<usize>,
            uses: &mut [usize],
            acc: f64,
            best: &mut f64,
        ) {
            let i = a.len();
            if acc >= *best {
                return;
            }
            if i == d.rows {
                *best = acc;
                return;
            }
            for j in 0..d.cols {
                if uses[j] < repeat && s.neighbours(i).filter(|&k| k < i).all(|k| a[k] != j) {
                    uses[j] += 1;
                    a.push(j);
                    go(d, s, repeat, a, uses, acc + d.at(i, j), best);
                    a.pop();
                    uses[j] -= 1;
                }
            }
        }
        let mut best = f64::INFINITY;
        go(d, s, repeat, &mut Vec::new(), &mut vec![0; d.cols], 0.0, &mut best);
        best
    }

    #[test]
    fn windows_cover_every_conflicting_pair_once_per_shared_window() {
        for (cols, rows, distance) in [(5, 4, 1), (3, 7, 2), (4, 4, 5), (1, 6, 1), (6, 1, 0)] {
            let s = Spacing { cols, rows, distance };
            for a in 0..cols * rows {
                let wins: Vec<usize> = s.windows_of(a).collect();
                assert!(!wins.is_empty());
                for &w in &wins {
                    assert!(s.cells_of(w).any(|c| c == a), "{cols}x{rows} D{distance}: window {w} misses {a}");
                }
                for b in 0..cols * rows {
                    let near = (a % cols).abs_diff(b % cols).max((a / cols).abs_diff(b / cols)) <= distance;
                    let share = s.windows_of(b).any(|w| wins.contains(&w));
                    assert_eq!(near, share, "{cols}x{rows} D{distance}: cells {a} and {b}");
                    assert_eq!(near && a != b, s.neighbours(a).any(|k| k == b));
                }
            }
        }
    }

    #[test]
    fn exact_meets_brute_force_or_says_it_is_a_bound() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
        let mut certified = 0;
        for case in 0..60 {
            // At most 6 cells, so the enumeration stays small.
            let cols = rng.gen_range(1..=3);
            let rows = if cols == 3 { 2 } else { rng.gen_range(2..=3) };
            let distance = rng.gen_range(1..=2);
            let s = Spacing { cols, rows, distance };
            let m = cols * rows;
            let n = rng.gen_range(s.window().0 * s.window().1..=6);
            let repeat = if rng.gen() { m } else { 2 };
            if m > n * repeat {
                continue;
            }
            let levels = if case % 2 == 0 { 3 } else { 1000 };
            let data = (0..m * n).map(|_| rng.gen_range(0..levels) as f64).collect();
            let d = DistanceMatrix::new(m, n, data).unwrap();
            let Ok(c) = solve_exact(&d, &s, repeat, |_, _, _| {}) else { continue };
            assert!(holds_every_pair(&s, &c.assignment));
            d.check_uses(&c.assignment, repeat).unwrap();
            let (got, want) = (d.cost(&c.assignment), brute_force(&d, &s, repeat));
            assert!(
                c.lower_bound <= want + 1e-9 * want.max(1.0),
                "lower bound {} above the optimum {want}",
                c.lower_bound
            );
            assert!(got >= want - 1e-9, "{got} beat the optimum {want}");
            if got - c.lower_bound <= CERTIFIED_GAP * got.max(1.0) {
                assert!((got - want).abs() <= 1e-9 * want.max(1.0), "certified {got} but the optimum is {want}");
                certified += 1;
            }
        }
        assert!(certified > 20, "only {certified} cases certified");
    }

    #[test]
    fn repair_holds_the_rule_and_the_repeat() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(22);
        for _ in 0..50 {
            let s = Spacing { cols: rng.gen_range(1..=12), rows: rng.gen_range(1..=9), distance: rng.gen_range(0..=3) };
            let m = s.cols * s.rows;
            let n = rng.gen_range(((2 * s.distance + 1).pow(2)).max(m.div_ceil(3))..=60.max(m));
            let d = DistanceMatrix::new(m, n, (0..m * n).map(|_| rng.gen_range(0.0..10.0)).collect()).unwrap();
            // Everyone on tile 0 at first: as wrong as an input gets.
            let fixed = s.repair(&d, &vec![0; m], 3).unwrap();
            assert!(holds_every_pair(&s, &fixed));
            d.check_uses(&fixed, 3).unwrap();
            assert!(s.check(&fixed).is_ok());
        }
        let s = Spacing { cols: 3, rows: 1, distance: 1 };
        let err = s.check(&[4, 4, 5]).unwrap_err().to_string();
        assert!(err.contains("tile 4") && err.contains("(0, 0)") && err.contains("(1, 0)"), "{err}");
        assert!(s.check_fits(3, 1).unwrap_err().to_string().contains("needs at least 2 tiles"));
        assert!(s.check_fits(4, 9).is_err());
    }
}
