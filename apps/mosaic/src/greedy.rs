//! Greedy search (Section 3.2): every patch takes its best-matching tile; then, for each tile
//! picked by several patches, the patch that matches it best keeps it and the others are
//! moved one after another to the best tile nobody uses yet.

use rayon::prelude::*;

use crate::matrix::DistanceMatrix;

/// Index of the smallest value (the first one on ties).
fn argmin(values: impl Iterator<Item = f64>) -> usize {
    let mut best = (0, f64::INFINITY);
    for (j, v) in values.enumerate() {
        if v < best.1 {
            best = (j, v);
        }
    }
    best.0
}

/// A repetition-free assignment by the greedy rule of Section 3.2.
pub fn solve(d: &DistanceMatrix) -> Vec<usize> {
    let best: Vec<usize> = (0..d.rows).into_par_iter().map(|i| argmin(d.row(i).iter().copied())).collect();
    // owner[j]: the patch that keeps tile j (lowest distance; lowest index on ties).
    let mut owner = vec![usize::MAX; d.cols];
    for (i, &j) in best.iter().enumerate() {
        if owner[j] == usize::MAX || d.at(i, j) < d.at(owner[j], j) {
            owner[j] = i;
        }
    }
    let mut used: Vec<bool> = owner.iter().map(|&o| o != usize::MAX).collect();
    let mut assignment = best;
    for (i, tile) in assignment.iter_mut().enumerate() {
        if owner[*tile] != i {
            let row = d.row(i);
            let free = argmin(row.iter().zip(&used).map(|(&v, &u)| if u { f64::INFINITY } else { v }));
            used[free] = true;
            *tile = free;
        }
    }
    assignment
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_conflicts_by_best_free_tile() {
        // Both patches like tile 0 best; patch 1 is closer to it, so patch 0 moves to tile 2.
        let d = DistanceMatrix::new(2, 3, vec![1.0, 9.0, 3.0, 0.5, 8.0, 7.0]).unwrap();
        assert_eq!(solve(&d), vec![2, 0]);
    }
}
