//! The exact optimum: a Jonker-Volgenant style shortest augmenting path solver for the
//! rectangular assignment problem (m <= n), in f64, O(m^2 n) in the worst case.
//!
//! Rows are added one at a time; each addition runs Dijkstra over reduced costs
//! d[i][j] - u[i] - v[j] (never negative) until it reaches a free column, then updates the
//! potentials and flips the path. The final potentials are an LP dual certificate: u[i] +
//! v[j] <= d[i][j] everywhere, with equality on the assignment and v[j] = 0 on unused
//! columns, so the assignment is provably optimal (see [`Solution::certify`]).

use indicatif::ProgressBar;

use crate::matrix::DistanceMatrix;

const NONE: usize = usize::MAX;

/// An optimal assignment with its dual potentials.
pub struct Solution {
    pub assignment: Vec<usize>,
    /// Row potentials.
    pub u: Vec<f64>,
    /// Column potentials (<= 0; 0 on unused columns).
    pub v: Vec<f64>,
}

/// Solves the assignment problem exactly; `progress` advances once per row added.
pub fn solve(d: &DistanceMatrix, progress: &ProgressBar) -> Vec<usize> {
    solve_with_duals(d, progress).assignment
}

/// Solves exactly and keeps the dual potentials.
///
/// The unvisited columns of a Dijkstra run are kept compacted in parallel arrays (index,
/// potential, tentative distance, predecessor, free), so the scan reads them contiguously
/// and gathers only the cost row.
pub fn solve_with_duals(d: &DistanceMatrix, progress: &ProgressBar) -> Solution {
    let (m, n) = (d.rows, d.cols);
    let mut u = vec![0.0f64; m];
    let mut v = vec![0.0f64; n];
    let mut col4row = vec![NONE; m];
    let mut row4col = vec![NONE; n];
    let mut shortest = vec![0.0f64; n];
    let mut path = vec![NONE; n];
    let mut rem_j: Vec<usize> = Vec::with_capacity(n);
    let mut rem_v: Vec<f64> = Vec::with_capacity(n);
    let mut rem_dist: Vec<f64> = Vec::with_capacity(n);
    let mut rem_path: Vec<usize> = Vec::with_capacity(n);
    let mut rem_free: Vec<bool> = Vec::with_capacity(n);
    let mut visited_cols: Vec<usize> = Vec::with_capacity(m + 1);
    let mut visited_rows: Vec<usize> = Vec::with_capacity(m);

    for cur in 0..m {
        rem_j.clear();
        rem_j.extend(0..n);
        rem_v.clear();
        rem_v.extend_from_slice(&v);
        rem_dist.clear();
        rem_dist.resize(n, f64::INFINITY);
        rem_path.clear();
        rem_path.resize(n, NONE);
        rem_free.clear();
        rem_free.extend(row4col.iter().map(|&r| r == NONE));
        visited_cols.clear();
        visited_rows.clear();
        let mut min_val = 0.0f64;
        let mut i = cur;
        let sink = loop {
            visited_rows.push(i);
            let row = d.row(i);
            let base = min_val - u[i];
            let mut lowest = f64::INFINITY;
            let mut index = NONE;
            for it in 0..rem_j.len() {
                let r = base + row[rem_j[it]] - rem_v[it];
                if r < rem_dist[it] {
                    rem_path[it] = i;
                    rem_dist[it] = r;
                }
                // Ties prefer a free column: the path ends sooner.
                let s = rem_dist[it];
                if s < lowest || (s == lowest && rem_free[it]) {
                    lowest = s;
                    index = it;
                }
            }
            min_val = lowest;
            let j = rem_j.swap_remove(index);
            rem_v.swap_remove(index);
            shortest[j] = rem_dist.swap_remove(index);
            path[j] = rem_path.swap_remove(index);
            rem_free.swap_remove(index);
            visited_cols.push(j);
            if row4col[j] == NONE {
                break j;
            }
            i = row4col[j];
        };
        u[cur] += min_val;
        for &r in &visited_rows[1..] {
            u[r] += min_val - shortest[col4row[r]];
        }
        for &j in &visited_cols {
            v[j] -= min_val - shortest[j];
        }
        let mut j = sink;
        loop {
            let r = path[j];
            row4col[j] = r;
            std::mem::swap(&mut col4row[r], &mut j);
            if r == cur {
                break;
            }
        }
        progress.inc(1);
    }
    Solution { assignment: col4row, u, v }
}

impl Solution {
    /// Checks the dual certificate within `tol` (absolute, in units of D): reduced costs
    /// non-negative, zero on the assignment, v <= 0 and v = 0 on unused columns. Returns the
    /// duality gap (primal cost minus dual objective), which is ~0 for an optimum.
    pub fn certify(&self, d: &DistanceMatrix, tol: f64) -> Result<f64, String> {
        let mut used = vec![false; d.cols];
        for (i, &j) in self.assignment.iter().enumerate() {
            used[j] = true;
            let r = d.at(i, j) - self.u[i] - self.v[j];
            if r.abs() > tol {
                return Err(format!("reduced cost {r} on assigned ({i}, {j})"));
            }
        }
        for i in 0..d.rows {
            for j in 0..d.cols {
                let r = d.at(i, j) - self.u[i] - self.v[j];
                if r < -tol {
                    return Err(format!("negative reduced cost {r} at ({i}, {j})"));
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

    /// Optimum by enumerating every injective map (independent of the solver).
    fn brute_force(d: &DistanceMatrix) -> f64 {
        fn go(d: &DistanceMatrix, i: usize, used: &mut Vec<bool>, acc: f64, best: &mut f64) {
            if i == d.rows {
                *best = best.min(acc);
                return;
            }
            for j in 0..d.cols {
                if !used[j] {
                    used[j] = true;
                    go(d, i + 1, used, acc + d.at(i, j), best);
                    used[j] = false;
                }
            }
        }
        let mut best = f64::INFINITY;
        go(d, 0, &mut vec![false; d.cols], 0.0, &mut best);
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
            let want = brute_force(&d);
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
            let s = solve_with_duals(&d, &ProgressBar::hidden());
            d.check_assignment(&s.assignment).unwrap();
            let gap = s.certify(&d, 1e-9 * d.mean().max(1.0)).unwrap();
            let cost = d.cost(&s.assignment);
            assert!(gap.abs() <= 1e-9 * cost.max(1.0), "{}x{}: duality gap {gap}", d.rows, d.cols);
        }
    }

    #[test]
    fn single_row_takes_its_minimum() {
        let d = DistanceMatrix::new(1, 4, vec![3.0, 1.0, 2.0, 1.0]).unwrap();
        assert_eq!(d.cost(&solve(&d, &ProgressBar::hidden())), 1.0);
    }
}
