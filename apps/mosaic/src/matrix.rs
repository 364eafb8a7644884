//! The distance matrix D (rows = patches, columns = tiles) with its checks, and assignments:
//! validity ("each tile at most once") and cost (computed in f64).

use std::path::Path;

use kit::npy::NpyDtype;
use rayon::prelude::*;

use crate::error::{MosaicError, Result};

/// A dense row-major m x n distance matrix, m <= n, finite, non-negative and within f32's
/// range.
#[derive(Clone, Debug)]
pub struct DistanceMatrix {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f64>,
}

impl DistanceMatrix {
    /// Checks shape and values: no repetition-free assignment exists when there are more
    /// patches than tiles, and the solvers assume finite non-negative distances.
    pub fn new(rows: usize, cols: usize, data: Vec<f64>) -> Result<DistanceMatrix> {
        if rows == 0 || cols == 0 {
            return Err(MosaicError::BadMatrix(format!("shape ({rows}, {cols}) is empty")));
        }
        if rows.checked_mul(cols) != Some(data.len()) {
            return Err(MosaicError::BadMatrix(format!("{} values for shape ({rows}, {cols})", data.len())));
        }
        if rows > cols {
            return Err(MosaicError::BadMatrix(format!(
                "{rows} patches but only {cols} tiles: no mosaic without repeated tiles exists (need m <= n)"
            )));
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

    /// Checks that `assignment` gives every patch one tile in range and no tile twice.
    pub fn check_assignment(&self, assignment: &[usize]) -> Result<()> {
        if assignment.len() != self.rows {
            return Err(MosaicError::InvalidInput(format!(
                "assignment has {} entries for {} patches",
                assignment.len(),
                self.rows
            )));
        }
        let mut used = vec![false; self.cols];
        for (i, &j) in assignment.iter().enumerate() {
            if j >= self.cols {
                return Err(MosaicError::InvalidInput(format!("patch {i} has tile {j} of {}", self.cols)));
            }
            if std::mem::replace(&mut used[j], true) {
                return Err(MosaicError::InvalidInput(format!("tile {j} is used twice (again at patch {i})")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_matrices() {
        assert!(DistanceMatrix::new(3, 2, vec![0.0; 6]).is_err());
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
