//! The CPU reference renderer: Eq. 5, 8, 9 in f64 over all kernels (no culling), with a
//! log-domain softmax. It is the oracle the GPU renderer is tested against and the
//! `--backend cpu` path (multithreaded with rayon).
//!
//! Each kernel is factored once: L = chol(S_XX), the log-constant
//! c = ln pi - ln|L| - (p/2) ln 2pi, and the expert's matrix A = S_YX S_XX^-1 (from the
//! joint Gaussian: m(x) = mu_Y + S_YX S_XX^-1 (x - mu_X)). A pixel's log-weight is
//! c - |L^-1 (x - mu_X)|^2 / 2.

use rayon::prelude::*;

use crate::model::{packed_index, packed_len, Model};

/// A model factored for evaluation in f64.
pub struct Factored {
    pub p: usize,
    pub mu_x: Vec<f64>,
    /// Packed lower Cholesky factors of S_XX.
    pub chol: Vec<f64>,
    pub c: Vec<f64>,
    /// A (3 x p, row-major) per kernel.
    pub a: Vec<f64>,
    pub mu_y: Vec<f64>,
}

impl Factored {
    /// Factors every kernel. The model must have been validated (positive-definite blocks).
    pub fn new(model: &Model) -> Factored {
        let p = model.coord_dims;
        let d = model.dims();
        let k = model.len();
        let mut f = Factored {
            p,
            mu_x: Vec::with_capacity(k * p),
            chol: Vec::with_capacity(k * packed_len(p)),
            c: Vec::with_capacity(k),
            a: Vec::with_capacity(k * 3 * p),
            mu_y: Vec::with_capacity(k * 3),
        };
        for j in 0..k {
            let mu = model.mean(j);
            let cov = model.covariance(j);
            f.mu_x.extend_from_slice(&mu[..p]);
            f.mu_y.extend_from_slice(&mu[p..d]);
            let sxx: Vec<f64> =
                (0..p).flat_map(|i| (0..=i).map(move |m| (i, m))).map(|(i, m)| cov[packed_index(i, m)]).collect();
            let l = crate::model::cholesky_packed(&sxx, p).expect("validated model");
            let logdet_half: f64 = (0..p).map(|i| l[packed_index(i, i)].ln()).sum();
            f.c.push(model.pi[j].ln() - logdet_half - 0.5 * p as f64 * (2.0 * std::f64::consts::PI).ln());
            // A^T = S_XX^-1 S_XY: two triangular solves per colour channel.
            for ch in 0..3 {
                let mut z: Vec<f64> = (0..p).map(|i| cov[packed_index(i, p + ch)]).collect();
                solve_lower(&l, &mut z);
                solve_upper_t(&l, &mut z);
                f.a.extend_from_slice(&z);
            }
            f.chol.extend_from_slice(&l);
        }
        f
    }

    pub fn len(&self) -> usize {
        self.c.len()
    }

    pub fn is_empty(&self) -> bool {
        self.c.is_empty()
    }

    /// The blended colour (model colour space) at coordinate `x` (length p), over all kernels.
    pub fn eval(&self, x: &[f64]) -> [f64; 3] {
        let p = self.p;
        let n = packed_len(p);
        let mut mx = f64::NEG_INFINITY;
        let mut sum = 0.0;
        let mut acc = [0.0; 3];
        let mut d = [0.0; 4];
        let mut z = [0.0; 4];
        for j in 0..self.len() {
            for i in 0..p {
                d[i] = x[i] - self.mu_x[j * p + i];
            }
            z[..p].copy_from_slice(&d[..p]);
            solve_lower(&self.chol[j * n..(j + 1) * n], &mut z[..p]);
            let q: f64 = z[..p].iter().map(|v| v * v).sum();
            let l = self.c[j] - 0.5 * q;
            if l > mx {
                let f = (mx - l).exp();
                sum *= f;
                acc.iter_mut().for_each(|a| *a *= f);
                mx = l;
            }
            let w = (l - mx).exp();
            sum += w;
            for (ch, a) in acc.iter_mut().enumerate() {
                let row = &self.a[(j * 3 + ch) * p..(j * 3 + ch + 1) * p];
                let m = self.mu_y[j * 3 + ch] + row.iter().zip(&d[..p]).map(|(r, v)| r * v).sum::<f64>();
                *a += w * m;
            }
        }
        acc.map(|a| a / sum)
    }
}

/// Solves L z = b in place (L packed lower).
pub fn solve_lower(l: &[f64], z: &mut [f64]) {
    for i in 0..z.len() {
        let mut s = z[i];
        for m in 0..i {
            s -= l[packed_index(i, m)] * z[m];
        }
        z[i] = s / l[packed_index(i, i)];
    }
}

/// Solves L^T z = b in place (L packed lower).
pub fn solve_upper_t(l: &[f64], z: &mut [f64]) {
    for i in (0..z.len()).rev() {
        let mut s = z[i];
        for m in i + 1..z.len() {
            s -= l[packed_index(m, i)] * z[m];
        }
        z[i] = s / l[packed_index(i, i)];
    }
}

/// Normalised view coordinates (u, v) of view index (a, b), fractional allowed.
pub fn view_coords(model: &Model, view: [f64; 2]) -> [f64; 2] {
    if model.coord_dims == 4 {
        [(view[0] + 0.5) / model.extent[2] as f64, (view[1] + 0.5) / model.extent[3] as f64]
    } else {
        [0.0, 0.0]
    }
}

/// Renders `width x height` RGB (row 0 at the top) in f64 over all kernels, on all cores.
/// `uv` is the normalised view position (ignored for images).
pub fn render(model: &Model, width: usize, height: usize, uv: [f64; 2]) -> Vec<f64> {
    render_region(model, width, height, uv, [0, 0, width, height])
}

/// Like [`render`], calling `row_done` (from any thread) as each row is finished, for a
/// progress bar: a large render on the CPU takes minutes.
pub fn render_with_progress(
    model: &Model,
    width: usize,
    height: usize,
    uv: [f64; 2],
    row_done: &(impl Fn() + Sync),
) -> Vec<f64> {
    render_rows(model, width, height, uv, [0, 0, width, height], row_done)
}

/// Like [`render`], only the pixels of `[x0, y0, w, h]` (clipped to the image), row-major.
pub fn render_region(model: &Model, width: usize, height: usize, uv: [f64; 2], region: [usize; 4]) -> Vec<f64> {
    render_rows(model, width, height, uv, region, &|| {})
}

/// [`render_region`], calling `row_done` after each row.
fn render_rows(
    model: &Model,
    width: usize,
    height: usize,
    uv: [f64; 2],
    region: [usize; 4],
    row_done: &(impl Fn() + Sync),
) -> Vec<f64> {
    let [x0, y0, w, h] = region;
    let (x1, y1) = ((x0 + w).min(width), (y0 + h).min(height));
    let w = x1.saturating_sub(x0);
    let f = Factored::new(model);
    let mut out = vec![0.0; w * y1.saturating_sub(y0) * 3];
    out.par_chunks_mut((w * 3).max(1)).enumerate().for_each(|(i, line)| {
        let row = y0 + i;
        for (j, px) in line.chunks_exact_mut(3).enumerate() {
            let col = x0 + j;
            let x = [(col as f64 + 0.5) / width as f64, (row as f64 + 0.5) / height as f64, uv[0], uv[1]];
            px.copy_from_slice(&model.color_space.to_rgb(f.eval(&x[..model.coord_dims])));
        }
        row_done();
    });
    out
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::data::sample_image;
    use crate::fit::Init;

    #[test]
    fn progress_counts_every_row_and_changes_nothing() {
        let grid = sample_image(13, 9);
        let model = Init::Grid.model(&grid, 6, &mut || {});
        let rows = AtomicUsize::new(0);
        let counted = render_with_progress(&model, 17, 11, [0.0; 2], &|| {
            rows.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(rows.into_inner(), 11);
        assert_eq!(counted, render(&model, 17, 11, [0.0; 2]));
    }
}
