//! The f64 twin of the GPU's refinement passes: the renderer's forward pass over every
//! kernel (no culling) and its analytic backward pass, on all cores.

use rayon::prelude::*;

use crate::data::Grid;
use crate::model::packed_index;
use crate::params::Layout;

/// The squared error sum |clamp(out) - target|^2 over every pixel and view of `grid` of the
/// model whose natural parameters are `nat` (see [`Layout`]), and its gradient with
/// respect to them. The clamp's derivative is taken as 1 (passed straight through), so
/// pixels rendered outside [0, 1] still pull towards their target; where every pixel is
/// inside, the gradient is exact.
pub fn loss_and_grad(layout: Layout, nat: &[f64], grid: &Grid) -> (f64, Vec<f64>) {
    let p = layout.p;
    let stride = layout.stride();
    let k = nat.len() / stride;
    let (w, h) = (grid.width(), grid.height());
    let (nu, nv) = if p == 4 { (grid.extent[2], grid.extent[3]) } else { (1, 1) };
    let rows: Vec<(usize, usize, usize)> =
        (0..nv).flat_map(|b| (0..nu).flat_map(move |a| (0..h).map(move |r| (a, b, r)))).collect();
    let zero = || (0.0, vec![0.0; nat.len()]);
    rows.par_iter()
        .fold(zero, |(mut sse, mut grad), &(a, b, row)| {
            let (mut z, mut y, mut l) = (vec![0.0; k * p], vec![0.0; k * 3], vec![0.0; k]);
            let target = grid.view(a, b);
            for col in 0..w {
                let x = [
                    (col as f64 + 0.5) / w as f64,
                    (row as f64 + 0.5) / h as f64,
                    (a as f64 + 0.5) / nu as f64,
                    (b as f64 + 0.5) / nv as f64,
                ];
                for j in 0..k {
                    let kj = &nat[j * stride..(j + 1) * stride];
                    let zj = &mut z[j * p..(j + 1) * p];
                    for i in 0..p {
                        zj[i] = (0..=i).map(|m| kj[layout.u() + packed_index(i, m)] * (x[m] - kj[m])).sum();
                    }
                    l[j] = kj[layout.c()] - 0.5 * zj.iter().map(|v| v * v).sum::<f64>();
                    for ch in 0..3 {
                        y[j * 3 + ch] =
                            kj[layout.mu_y() + ch] + (0..p).map(|i| kj[layout.g() + ch * p + i] * zj[i]).sum::<f64>();
                    }
                }
                let mx = l.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let lse = mx + l.iter().map(|v| (v - mx).exp()).sum::<f64>().ln();
                let mut out = [0.0; 3];
                for j in 0..k {
                    let wj = (l[j] - lse).exp();
                    (0..3).for_each(|ch| out[ch] += wj * y[j * 3 + ch]);
                }
                let t = &target[(row * w + col) * 3..(row * w + col) * 3 + 3];
                let e: [f64; 3] = std::array::from_fn(|ch| out[ch].clamp(0.0, 1.0) - t[ch] as f64);
                sse += e.iter().map(|v| v * v).sum::<f64>();
                let r = e.map(|v| 2.0 * v);
                for j in 0..k {
                    let wj = (l[j] - lse).exp();
                    let kj = &nat[j * stride..(j + 1) * stride];
                    let gj = &mut grad[j * stride..(j + 1) * stride];
                    let zj = &z[j * p..(j + 1) * p];
                    let wr = r.map(|v| wj * v);
                    let gl = wj * (0..3).map(|ch| (y[j * 3 + ch] - out[ch]) * r[ch]).sum::<f64>();
                    gj[layout.c()] += gl;
                    (0..3).for_each(|ch| gj[layout.mu_y() + ch] += wr[ch]);
                    let mut dz = [0.0; 4];
                    for i in 0..p {
                        for ch in 0..3 {
                            gj[layout.g() + ch * p + i] += wr[ch] * zj[i];
                        }
                        dz[i] = -gl * zj[i] + (0..3).map(|ch| kj[layout.g() + ch * p + i] * wr[ch]).sum::<f64>();
                        for m in 0..=i {
                            gj[layout.u() + packed_index(i, m)] += dz[i] * (x[m] - kj[m]);
                        }
                    }
                    // dmu_X = -U^T dz.
                    for m in 0..p {
                        gj[m] -= (m..p).map(|i| kj[layout.u() + packed_index(i, m)] * dz[i]).sum::<f64>();
                    }
                }
            }
            (sse, grad)
        })
        .reduce(zero, |(sa, mut ga), (sb, gb)| {
            ga.iter_mut().zip(gb).for_each(|(a, b)| *a += b);
            (sa + sb, ga)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::em::fit_cpu;
    use crate::data::sample_lightfield;
    use crate::fit::Init;
    use crate::params::Params;

    /// Central differences of `f` at `x` along every coordinate, steps `h` times the
    /// coordinate's scale (at least 1).
    fn central(x: &[f64], h: f64, mut f: impl FnMut(&[f64]) -> f64) -> Vec<f64> {
        let mut x = x.to_vec();
        (0..x.len())
            .map(|i| {
                let (keep, step) = (x[i], h * x[i].abs().max(1.0));
                x[i] = keep + step;
                let up = f(&x);
                x[i] = keep - step;
                let down = f(&x);
                x[i] = keep;
                (up - down) / (2.0 * step)
            })
            .collect()
    }

    /// The worst error of `got` against `want`, relative to the largest |want| of the
    /// same parameter kind (its index modulo the stride) over all kernels.
    fn worst(got: &[f64], want: &[f64], stride: usize) -> f64 {
        let scale: Vec<f64> = (0..stride)
            .map(|s| want.iter().skip(s).step_by(stride).fold(0.0f64, |a, v| a.max(v.abs())).max(1e-12))
            .collect();
        got.iter().zip(want).enumerate().map(|(i, (g, w))| (g - w).abs() / scale[i % stride]).fold(0.0, f64::max)
    }

    /// A small fitted model whose rendering stays inside (0, 1) (so the clamp is smooth).
    fn small(grid: &crate::data::Grid, k: usize) -> Params {
        let init = Init::Kmeans.model(grid, k, &mut || {});
        let (model, _) = fit_cpu(grid, init, 3, |_, _| {}).unwrap();
        let params = Params::from_model(&model).unwrap();
        let rgb = crate::cpu::render::render(
            &model,
            grid.width(),
            grid.height(),
            crate::cpu::render::view_coords(&model, [0.0; 2]),
        );
        assert!(rgb.iter().all(|v| (0.0..1.0).contains(v) && *v > 0.0), "the test model renders outside (0, 1)");
        params
    }

    /// The analytic gradient against central differences of the f64 loss, in the natural
    /// and in the optimised parameters, for an image (5 kernels, 13x11) and a light field
    /// (4 kernels, 7x5 x 2x2 views). Bound: every component within 1e-6 of the largest
    /// gradient of its kind (central differences with steps of 1e-6 are good to about 1e-8
    /// relative here; 3e-8 is the worst seen).
    #[test]
    fn gradient_matches_finite_differences() {
        for (grid, k) in [(sample_lightfield(13, 11, 1, 1, 0.0), 5), (sample_lightfield(7, 5, 2, 2, 1.0), 4)] {
            let params = small(&grid, k);
            let layout = params.layout();
            let nat = params.natural();
            let (_, grad) = loss_and_grad(layout, &nat, &grid);
            let fd = central(&nat, 1e-6, |x| loss_and_grad(layout, x, &grid).0);
            let e = worst(&grad, &fd, layout.stride());
            eprintln!("p = {}: natural gradient, worst relative error {e:.2e}", layout.p);
            assert!(e < 1e-6, "natural gradient: {e:e}\n{grad:?}\n{fd:?}");
            let chained = params.chain(&grad);
            let mut moved = params.clone();
            let fd = central(&params.v, 1e-6, |x| {
                moved.v.copy_from_slice(x);
                loss_and_grad(layout, &moved.natural(), &grid).0
            });
            let e = worst(&chained, &fd, layout.stride());
            eprintln!("p = {}: optimised parameters, worst relative error {e:.2e}", layout.p);
            assert!(e < 1e-6, "chained gradient: {e:e}");
        }
    }

    /// Parameters and models convert both ways without changing what renders, up to the
    /// model's rounding to f32 (what the binary file holds): 1e-5 relative.
    #[test]
    fn params_round_trip_the_model() {
        let grid = sample_lightfield(13, 11, 1, 1, 0.0);
        let params = small(&grid, 5);
        let model = params.to_model().unwrap();
        let again = Params::from_model(&model).unwrap();
        for (a, b) in params.natural().iter().zip(again.natural()) {
            assert!((a - b).abs() <= 1e-5 * a.abs().max(1.0), "{a} vs {b}");
        }
    }
}
