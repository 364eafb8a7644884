//! Greedy search (Section 3.2): every patch takes its best-matching tile; then, for each tile
//! picked by more patches than it may serve (`repeat`), the patches that match it best keep
//! it and the others are moved one after another to the best tile with a use left.

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

/// An assignment using each tile at most `repeat` times, by the greedy rule of Section 3.2.
/// The caller has checked that the tiles can cover the patches (`m <= n x repeat`).
pub fn solve(d: &DistanceMatrix, repeat: usize) -> Vec<usize> {
    let best: Vec<usize> = (0..d.rows).into_par_iter().map(|i| argmin(d.row(i).iter().copied())).collect();
    // Each tile keeps the `repeat` patches that match it best (lowest index on ties).
    let mut claims: Vec<usize> = (0..d.rows).collect();
    claims.sort_by(|&a, &b| best[a].cmp(&best[b]).then(d.at(a, best[a]).total_cmp(&d.at(b, best[b]))).then(a.cmp(&b)));
    let mut uses = vec![0usize; d.cols];
    let mut keeps = vec![false; d.rows];
    for &i in &claims {
        if uses[best[i]] < repeat {
            uses[best[i]] += 1;
            keeps[i] = true;
        }
    }
    let mut assignment = best;
    for (i, tile) in assignment.iter_mut().enumerate() {
        if !keeps[i] {
            let row = d.row(i);
            let free = argmin(row.iter().zip(&uses).map(|(&v, &u)| if u < repeat { v } else { f64::INFINITY }));
            uses[free] += 1;
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
        assert_eq!(solve(&d, 1), vec![2, 0]);
        assert_eq!(solve(&d, 2), vec![0, 0]);
    }

    #[test]
    fn displaced_patches_take_the_best_tile_with_a_use_left() {
        // Three patches like tile 0; with two uses, patch 2 (the worst match) moves to tile 1.
        let d = DistanceMatrix::new(3, 2, vec![1.0, 5.0, 2.0, 5.0, 3.0, 4.0]).unwrap();
        assert_eq!(solve(&d, 2), vec![0, 0, 1]);
    }
}
