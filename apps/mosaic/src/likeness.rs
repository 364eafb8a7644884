//! What the limit on repeats costs a mosaic's likeness: the cost per cell against the free
//! optimum (every cell showing its best tile, repeats unlimited), the fraction of the library
//! in use, and the repeat that would let most cells keep their best tile.

use crate::matrix::DistanceMatrix;

/// The cost over the free optimum above which a mosaic is said to lose its likeness.
pub const LIKENESS_LOST: f64 = 1.5;
/// The fraction of cells the suggested repeat lets keep their best tile.
const KEEP_BEST: f64 = 0.9;

/// The likeness of one assignment.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Likeness {
    /// Distinct tiles used over the tiles in the library.
    pub used_fraction: f64,
    /// The assignment's cost over the free optimum's (1 when both are 0; infinite, printed
    /// as null, when only the free optimum is 0).
    pub cost_ratio: f64,
    /// The smallest repeat with which 90% of the cells could show their best tile.
    pub suggested_repeat: usize,
}

impl Likeness {
    /// Measures `assignment` of `d`.
    pub fn measure(d: &DistanceMatrix, assignment: &[usize]) -> Likeness {
        let mut best_count = vec![0usize; d.cols];
        let mut free = 0.0;
        for i in 0..d.rows {
            let row = d.row(i);
            let (j, &x) = row.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1)).expect("a row has a tile");
            best_count[j] += 1;
            free += x;
        }
        let mut used = vec![false; d.cols];
        assignment.iter().for_each(|&j| used[j] = true);
        let cost = d.cost(assignment);
        let cost_ratio = if cost == free { 1.0 } else { cost / free };
        let want = (KEEP_BEST * d.rows as f64).ceil() as usize;
        let kept = |r: usize| best_count.iter().map(|&c| c.min(r)).sum::<usize>();
        let most = best_count.iter().copied().max().unwrap_or(1).max(1);
        let suggested_repeat = (1..=most).find(|&r| kept(r) >= want).unwrap_or(most);
        Likeness {
            used_fraction: used.iter().filter(|&&u| u).count() as f64 / d.cols as f64,
            cost_ratio,
            suggested_repeat,
        }
    }

    /// A warning when the limit on repeats (`repeat`) costs most of the likeness: the cost
    /// is over [`LIKENESS_LOST`] times the free optimum's and a larger repeat would help.
    pub fn warning(&self, repeat: usize) -> Option<String> {
        if self.cost_ratio <= LIKENESS_LOST || self.suggested_repeat <= repeat {
            return None;
        }
        Some(format!(
            "the mosaic uses {:.0}% of the tiles and costs {:.2}x what it would if every cell showed its best tile: \
             --repeat {repeat} leaves too few good tiles for this target, so likeness suffers; \
             --repeat {} would let 90% of the cells show their best tile (or add tiles)",
            100.0 * self.used_fraction,
            self.cost_ratio,
            self.suggested_repeat
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_every_cell_wants_one_tile_of_is_named() {
        // Six cells all want tile 0 (distance 1), the other tiles cost 10.
        let d = DistanceMatrix::new(6, 3, (0..18).map(|k| if k % 3 == 0 { 1.0 } else { 10.0 }).collect()).unwrap();
        let assignment = [0, 0, 1, 1, 2, 2];
        let l = Likeness::measure(&d, &assignment);
        assert_eq!((l.used_fraction, l.suggested_repeat), (1.0, 6));
        assert!((l.cost_ratio - 42.0 / 6.0).abs() < 1e-12);
        let text = l.warning(2).unwrap();
        assert!(text.contains("100% of the tiles") && text.contains("--repeat 6"), "{text}");
        // Each cell with its own best tile: nothing to say.
        let d = DistanceMatrix::new(2, 2, vec![1.0, 5.0, 5.0, 1.0]).unwrap();
        let l = Likeness::measure(&d, &[0, 1]);
        assert_eq!((l.cost_ratio, l.suggested_repeat), (1.0, 1));
        assert!(l.warning(1).is_none());
        // Costs of 0 are the free optimum.
        let d = DistanceMatrix::new(2, 2, vec![0.0; 4]).unwrap();
        assert_eq!(Likeness::measure(&d, &[0, 1]).cost_ratio, 1.0);
    }
}
