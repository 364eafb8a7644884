//! Small dense linear algebra for training: the SVD of a square matrix by one-sided Jacobi
//! rotations (Hestenes), and the orthonormal polar factor it gives (orthogonal Procrustes).
//! Matrices are at most 16 x 16 here, so a plain f64 implementation is both exact enough
//! and fast; no linear-algebra crate is needed.

/// A square matrix, row-major, f64.
#[derive(Clone, Debug, PartialEq)]
pub struct Mat {
    pub n: usize,
    pub a: Vec<f64>,
}

impl Mat {
    pub fn zeros(n: usize) -> Mat {
        Mat { n, a: vec![0.0; n * n] }
    }

    pub fn identity(n: usize) -> Mat {
        let mut m = Mat::zeros(n);
        (0..n).for_each(|i| m.a[i * n + i] = 1.0);
        m
    }

    pub fn at(&self, r: usize, c: usize) -> f64 {
        self.a[r * self.n + c]
    }

    /// `self * other^T`.
    pub fn mul_transposed(&self, other: &Mat) -> Mat {
        let n = self.n;
        let mut out = Mat::zeros(n);
        for r in 0..n {
            for c in 0..n {
                out.a[r * n + c] = (0..n).map(|k| self.at(r, k) * other.at(c, k)).sum();
            }
        }
        out
    }
}

/// `a = u * diag(s) * v^T` with orthonormal `u` and `v`.
pub struct Svd {
    pub u: Mat,
    pub s: Vec<f64>,
    pub v: Mat,
}

/// SVD by one-sided Jacobi: rotates column pairs of `a` until they are orthogonal; the
/// rotations accumulate into `v`, the column norms are the singular values. Columns with a
/// (numerically) zero singular value get orthonormal completions so `u` is always orthonormal.
pub fn svd(a: &Mat) -> Svd {
    let n = a.n;
    let mut w = a.clone();
    let mut v = Mat::identity(n);
    for _sweep in 0..60 {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, 0.0);
                for r in 0..n {
                    let (x, y) = (w.at(r, p), w.at(r, q));
                    alpha += x * x;
                    beta += y * y;
                    gamma += x * y;
                }
                if gamma.abs() <= 1e-15 * (alpha * beta).sqrt() || gamma == 0.0 {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                for m in [&mut w, &mut v] {
                    for r in 0..n {
                        let (x, y) = (m.a[r * n + p], m.a[r * n + q]);
                        m.a[r * n + p] = c * x - s * y;
                        m.a[r * n + q] = s * x + c * y;
                    }
                }
            }
        }
        if !rotated {
            break;
        }
    }
    let s: Vec<f64> = (0..n).map(|c| (0..n).map(|r| w.at(r, c).powi(2)).sum::<f64>().sqrt()).collect();
    let largest = s.iter().cloned().fold(0.0, f64::max);
    let mut u = Mat::zeros(n);
    let mut done = vec![false; n];
    for c in 0..n {
        if s[c] > 1e-12 * largest.max(1e-300) {
            (0..n).for_each(|r| u.a[r * n + c] = w.at(r, c) / s[c]);
            done[c] = true;
        }
    }
    complete_orthonormal(&mut u, &mut done);
    Svd { u, s, v }
}

/// Fills the columns of `u` not marked `done` with unit vectors orthogonal to every other
/// column (Gram-Schmidt on the standard basis).
fn complete_orthonormal(u: &mut Mat, done: &mut [bool]) {
    let n = u.n;
    let mut candidate = 0;
    for c in 0..n {
        if done[c] {
            continue;
        }
        while candidate < n {
            let mut e = vec![0.0; n];
            e[candidate] = 1.0;
            candidate += 1;
            for _ in 0..2 {
                for k in (0..n).filter(|&k| done[k]) {
                    let dot: f64 = (0..n).map(|r| e[r] * u.at(r, k)).sum();
                    (0..n).for_each(|r| e[r] -= dot * u.at(r, k));
                }
            }
            let norm = e.iter().map(|x| x * x).sum::<f64>().sqrt();
            if norm > 1e-6 {
                (0..n).for_each(|r| u.a[r * n + c] = e[r] / norm);
                done[c] = true;
                break;
            }
        }
    }
}

/// The orthonormal matrix nearest to `m` (its polar factor `u v^T`): the orthogonal
/// Procrustes solution of `max trace(Q^T m)`.
pub fn polar(m: &Mat) -> Mat {
    let d = svd(m);
    d.u.mul_transposed(&d.v)
}

/// Largest |Q^T Q - I| entry: how far the columns of `q` are from orthonormal.
pub fn orthonormality_error(q: &[f32], n: usize) -> f64 {
    let mut worst: f64 = 0.0;
    for i in 0..n {
        for j in 0..n {
            let dot: f64 = (0..n).map(|r| q[r * n + i] as f64 * q[r * n + j] as f64).sum();
            worst = worst.max((dot - if i == j { 1.0 } else { 0.0 }).abs());
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn reconstruct(d: &Svd) -> Mat {
        let n = d.u.n;
        let mut us = d.u.clone();
        for r in 0..n {
            for c in 0..n {
                us.a[r * n + c] *= d.s[c];
            }
        }
        us.mul_transposed(&d.v)
    }

    fn max_diff(a: &Mat, b: &Mat) -> f64 {
        a.a.iter().zip(&b.a).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
    }

    #[test]
    fn svd_reconstructs_random_and_rank_deficient_matrices() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for n in [1, 3, 5, 8, 13] {
            let mut a = Mat::zeros(n);
            a.a.iter_mut().for_each(|x| *x = rng.gen_range(-1.0..1.0));
            if n > 2 {
                // Make the last row a copy of the first: rank n-1.
                for c in 0..n {
                    a.a[(n - 1) * n + c] = a.a[c];
                }
            }
            let d = svd(&a);
            assert!(max_diff(&reconstruct(&d), &a) < 1e-10, "n = {n}");
            let as_f32 = |m: &Mat| m.a.iter().map(|&x| x as f32).collect::<Vec<_>>();
            assert!(orthonormality_error(&as_f32(&d.u), n) < 1e-6);
            assert!(orthonormality_error(&as_f32(&d.v), n) < 1e-6);
            let q = polar(&a);
            assert!(orthonormality_error(&as_f32(&q), n) < 1e-6);
        }
    }

    #[test]
    fn polar_of_an_orthonormal_matrix_is_itself() {
        let a = Mat { n: 2, a: vec![0.6, -0.8, 0.8, 0.6] };
        assert!(max_diff(&polar(&a), &a) < 1e-12);
        // Scaling does not change the polar factor.
        let b = Mat { n: 2, a: a.a.iter().map(|x| x * 3.0).collect() };
        assert!(max_diff(&polar(&b), &a) < 1e-12);
    }
}
