//! The distance matrix D (rows = patches, columns = tiles) with its checks, and assignments:
//! validity ("each tile at most `repeat` times") and cost (computed in f64).

use std::path::Path;

use kit::npy::NpyDtype;
use rayon::prelude::*;

use crate::error::{MosaicError, Result};

/// A dense row-major m x n distance matrix, finite, non-negative and within f32's range.
/// A mosaic exists when m <= n x repeat ([`check_capacity`]).
#[derive(Clone, Debug)]
pub struct DistanceMatrix {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f64>,
}

impl DistanceMatrix {
    /// Checks shape and values: the solvers assume finite non-negative distances.
    pub fn new(rows: usize, cols: usize, data: Vec<f64>) -> Result<DistanceMatrix> {
        if rows == 0 || cols == 0 {
            return Err(MosaicError::BadMatrix(format!("shape ({rows}, {cols}) is empty")));
        }
        if rows.checked_mul(cols) != Some(data.len()) {
            return Err(MosaicError::BadMatrix(format!("{} values for shape ({rows}, {cols})", data.len())));
        }
        if let Some(k) = data.iter().position(|v| !v.is_finite()) {
            return Err(MosaicError::BadMatrix(format!(
                "entry ({}, {}) is {} (NaN or infinite entries are not distances)",
                k / cols,
                k % cols,
                data[k]
            )));
        }
        // SoftAssign on the GPU works on an f32 copy: the CPU path refuses what it cannot hold,
        // so both accept the same matrices.
        if let Some(k) = data.iter().position(|&v| v > f32::MAX as f64) {
            return Err(MosaicError::BadMatrix(format!(
                "entry ({}, {}) is {:e}, beyond float32's range (the GPU computes in f32)",
                k / cols,
                k % cols,
                data[k]
            )));
        }
        if let Some(k) = data.iter().position(|&v| v < 0.0) {
            return Err(MosaicError::BadMatrix(format!(
                "entry ({}, {}) is negative ({}); distances must be >= 0",
                k / cols,
                k % cols,
                data[k]
            )));
        }
        Ok(DistanceMatrix { rows, cols, data })
    }

    /// Reads a 2-D float32 or float64 `.npy` (C order). The header is checked against the
    /// file's length and the memory budget before anything is allocated (kit::npy), the
    /// element type before any value is read, and every entry against [`DistanceMatrix::new`].
    pub fn load_npy(path: &Path) -> Result<DistanceMatrix> {
        let header = kit::npy::header(path)?;
        if !matches!(header.dtype, NpyDtype::F32 | NpyDtype::F64) {
            return Err(MosaicError::BadMatrix(format!(
                "{}: element type {:?}; a distance matrix is float32 or float64",
                path.display(),
                header.dtype
            )));
        }
        if header.shape.len() != 2 {
            return Err(MosaicError::BadMatrix(format!(
                "{}: shape {:?} is not 2-D (m, n)",
                path.display(),
                header.shape
            )));
        }
        let (shape, data) = kit::npy::read_f64(path)?;
        DistanceMatrix::new(shape[0], shape[1], data).map_err(|e| {
            MosaicError::BadMatrix(format!(
                "{}: {}",
                path.display(),
                e.to_string().replacen("invalid distance matrix: ", "", 1)
            ))
        })
    }

    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }

    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.data[i * self.cols + j]
    }

    /// The entries as f32 (what the GPU works on).
    pub fn to_f32(&self) -> Vec<f32> {
        self.data.par_iter().map(|&v| v as f32).collect()
    }

    /// Mean of all entries: the scale the SoftAssign temperatures are relative to.
    pub fn mean(&self) -> f64 {
        self.data.par_iter().sum::<f64>() / self.data.len() as f64
    }

    /// Sum of D[i, assignment[i]] in f64.
    pub fn cost(&self, assignment: &[usize]) -> f64 {
        assignment.iter().enumerate().map(|(i, &j)| self.at(i, j)).sum()
    }

    /// Checks that `repeat` uses of each tile can cover every patch.
    pub fn check_capacity(&self, repeat: usize) -> Result<()> {
        check_capacity(self.rows, self.cols, repeat)
    }

    /// Checks that `assignment` gives every patch one tile in range and no tile twice.
    pub fn check_assignment(&self, assignment: &[usize]) -> Result<()> {
        self.check_uses(assignment, 1)
    }

    /// Checks that `assignment` gives every patch one tile in range and no tile more than
    /// `repeat` times.
    pub fn check_uses(&self, assignment: &[usize], repeat: usize) -> Result<()> {
        if assignment.len() != self.rows {
            return Err(MosaicError::InvalidInput(format!(
                "assignment has {} entries for {} patches",
                assignment.len(),
                self.rows
            )));
        }
        let mut uses = vec![0usize; self.cols];
        for (i, &j) in assignment.iter().enumerate() {
            if j >= self.cols {
                return Err(MosaicError::InvalidInput(format!("patch {i} has tile {j} of {}", self.cols)));
            }
            uses[j] += 1;
            if uses[j] > repeat {
                return Err(MosaicError::InvalidInput(format!(
                    "tile {j} is used {} times, more than {repeat} (again at patch {i})",
                    uses[j]
                )));
            }
        }
        Ok(())
    }
}

/// Refuses a problem of `patches` patches that `tiles` tiles, each used at most `repeat`
/// times, cannot cover, naming the smallest `--repeat` that works.
pub fn check_capacity(patches: usize, tiles: usize, repeat: usize) -> Result<()> {
    if tiles > 0 && patches <= tiles.saturating_mul(repeat) {
        return Ok(());
    }
    let smallest = patches.div_ceil(tiles.max(1));
    let problem = if repeat <= 1 {
        format!("{patches} patches but only {tiles} tiles: no mosaic without repeated tiles exists (need m <= n)")
    } else {
        format!(
            "{patches} patches but {tiles} tiles used at most {repeat} times each cover only {} (need m <= n x repeat)",
            tiles.saturating_mul(repeat)
        )
    };
    Err(MosaicError::InvalidInput(format!("{problem}; --repeat {smallest} is the smallest that works")))
}

/// The uses of each tile that can matter: no more than one per patch.
pub fn effective_repeat(repeat: usize, patches: usize) -> usize {
    repeat.clamp(1, patches.max(1))
}

/// Every tile of D offered `repeat` times, without copying D: slot s is a use of tile
/// s mod n, so slots 0..n are the tiles themselves and each further block of n repeats
/// them. The assignment problem over slots (each slot at most once) is the problem with
/// repeats.
#[derive(Clone, Copy, Debug)]
pub struct Slots<'a> {
    pub d: &'a DistanceMatrix,
    /// n x effective repeat.
    pub count: usize,
}

impl<'a> Slots<'a> {
    pub fn new(d: &'a DistanceMatrix, repeat: usize) -> Slots<'a> {
        Slots { d, count: d.cols * effective_repeat(repeat, d.rows) }
    }

    /// The tile of slot `s`.
    pub fn tile(&self, s: usize) -> usize {
        s % self.d.cols
    }

    /// The distance of patch `i` to slot `s`'s tile.
    pub fn at(&self, i: usize, s: usize) -> f64 {
        self.d.at(i, self.tile(s))
    }

    /// Slots for a tile assignment: the k-th patch (in patch order) on tile j gets slot
    /// k n + j.
    pub fn of_assignment(&self, assignment: &[usize]) -> Vec<usize> {
        let mut uses = vec![0usize; self.d.cols];
        assignment
            .iter()
            .map(|&j| {
                uses[j] += 1;
                (uses[j] - 1) * self.d.cols + j
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_matrices() {
        let tall = DistanceMatrix::new(5, 2, vec![0.0; 10]).unwrap();
        let err = tall.check_capacity(1).unwrap_err().to_string();
        assert!(err.contains("without repeated tiles") && err.contains("--repeat 3 is the smallest"), "{err}");
        let err = tall.check_capacity(2).unwrap_err().to_string();
        assert!(err.contains("cover only 4") && err.contains("--repeat 3 is the smallest"), "{err}");
        tall.check_capacity(3).unwrap();
        assert!(tall.check_uses(&[0, 1, 0, 1, 0], 3).is_ok());
        assert!(tall.check_uses(&[0, 1, 0, 1, 0], 2).unwrap_err().to_string().contains("3 times"));
        let slots = Slots::new(&tall, 3);
        assert_eq!(slots.count, 6);
        assert_eq!(slots.of_assignment(&[0, 1, 0, 1, 0]), vec![0, 1, 2, 3, 4]);
        assert_eq!(Slots::new(&tall, 1000).count, 10, "no more uses than patches");
        assert!(DistanceMatrix::new(1, 2, vec![0.0, f64::NAN]).is_err());
        assert!(DistanceMatrix::new(1, 2, vec![0.0, -1.0]).is_err());
        assert!(DistanceMatrix::new(1, 2, vec![0.0, 1e39]).unwrap_err().to_string().contains("float32"));
        assert!(DistanceMatrix::new(1, 2, vec![0.0]).is_err());
        assert!(DistanceMatrix::new(0, 2, vec![]).is_err());
        let d = DistanceMatrix::new(2, 3, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        assert_eq!(d.cost(&[2, 0]), 7.0);
        assert!(d.check_assignment(&[1, 1]).is_err());
        assert!(d.check_assignment(&[1, 3]).is_err());
        assert!(d.check_assignment(&[1]).is_err());
        assert!(d.check_assignment(&[1, 2]).is_ok());
    }
}
