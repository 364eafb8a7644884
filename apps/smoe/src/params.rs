//! The parameters refinement works on ([`crate::refine`]), two sets of them:
//! - the *natural* parameters the renderer evaluates, per kernel ([`Layout`]): mu_X, U
//!   (= L^-1, L the Cholesky factor of S_XX, so z = U (x - mu_X)), the gate's log-constant
//!   c, mu_Y and G (the expert y = mu_Y + G z). Both backends return the gradient in these
//!   ([`crate::cpu::refine::loss_and_grad`], [`crate::gpu::refine::GpuRefine`]).
//! - the *optimised* parameters ([`Params`]), chosen so that Adam's steps are of like size
//!   and every step keeps the model valid: the centre in pixels, the precision factor in
//!   pixel units as a log-diagonal (positive, so S_XX stays positive definite) and shears
//!   relative to it, ln pi, mu_Y and G (colour per standard deviation).
//!
//! Also Adam's moments ([`Adam`]) and the options of a refinement ([`RefineOptions`]).

use crate::model::{cholesky_packed, packed_index, packed_len, ColorSpace, Model, ModelError};

/// Offsets of one kernel's natural parameters (and of their gradient).
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub p: usize,
}

impl Layout {
    pub fn tri(self) -> usize {
        packed_len(self.p)
    }
    /// Offset of U (packed lower).
    pub fn u(self) -> usize {
        self.p
    }
    pub fn c(self) -> usize {
        self.p + self.tri()
    }
    pub fn mu_y(self) -> usize {
        self.c() + 1
    }
    /// Offset of G (3 x p, row-major by colour channel).
    pub fn g(self) -> usize {
        self.mu_y() + 3
    }
    /// Values per kernel.
    pub fn stride(self) -> usize {
        self.g() + 3 * self.p
    }
}

/// ln(2 pi) / 2.
const HALF_LN_2PI: f64 = 0.918_938_533_204_672_8;
/// Bounds that keep every step's model valid in f32: the precision factor's diagonal in
/// pixel units (a standard deviation of at least a quarter pixel), shears, colours, expert
/// slopes (colour per standard deviation) and how far below the largest prior a prior may go.
pub(crate) const MAX_LOG_DIAG: f64 = 1.386_294_361_119_890_6; // ln 4
pub(crate) const MAX_SHEAR: f64 = 8.0;
pub(crate) const MAX_COLOUR: f64 = 4.0;
pub(crate) const MAX_SLOPE: f64 = 8.0;
pub(crate) const PRIOR_RANGE: f64 = 60.0;

/// The optimised parameters of every kernel (see the module's documentation), with the
/// parts of the model refinement does not change.
#[derive(Clone, Debug)]
pub struct Params {
    pub(crate) layout: Layout,
    pub(crate) template: Model,
    /// Pixels per coordinate axis.
    pub(crate) extent: Vec<f64>,
    /// Per kernel: centre in pixels (p), log-diagonal (p), shears (p(p-1)/2, row by row),
    /// ln pi, mu_Y (3), G (3p). As many values as the natural layout.
    pub v: Vec<f64>,
    /// Per kernel: the conditional colour covariance S_YY - S_YX S_XX^-1 S_XY (packed 3x3).
    pub(crate) resid: Vec<f64>,
}

/// Inverse of a packed lower-triangular matrix (packed lower).
fn invert_lower(l: &[f64], p: usize) -> Vec<f64> {
    let mut out = vec![0.0; packed_len(p)];
    for col in 0..p {
        for i in col..p {
            let mut s = if i == col { 1.0 } else { 0.0 };
            for m in col..i {
                s -= l[packed_index(i, m)] * out[packed_index(m, col)];
            }
            out[packed_index(i, col)] = s / l[packed_index(i, i)];
        }
    }
    out
}

impl Params {
    /// The parameters of `model` (validated, RGB).
    pub fn from_model(model: &Model) -> Result<Params, ModelError> {
        if model.color_space != ColorSpace::Rgb {
            return Err(ModelError::Invalid("refinement needs an RGB model".into()));
        }
        let p = model.coord_dims;
        let layout = Layout { p };
        let d = model.dims();
        let extent: Vec<f64> = model.extent.iter().map(|&e| e as f64).collect();
        let mut v = Vec::with_capacity(model.len() * layout.stride());
        let mut resid = Vec::with_capacity(model.len() * 6);
        for j in 0..model.len() {
            let cov = model.covariance(j);
            let mu = model.mean(j);
            let sxx: Vec<f64> =
                (0..p).flat_map(|i| (0..=i).map(move |m| (i, m))).map(|(i, m)| cov[packed_index(i, m)]).collect();
            let l = cholesky_packed(&sxx, p)
                .ok_or(ModelError::Kernel { index: j, message: "S_XX is not positive definite".into() })?;
            let u = invert_lower(&l, p);
            // U' = U diag(1/E): row i's diagonal exp(s_i), its shears relative to it.
            let up = |i: usize, m: usize| u[packed_index(i, m)] / extent[m];
            v.extend((0..p).map(|i| mu[i] * extent[i]));
            v.extend((0..p).map(|i| up(i, i).ln()));
            for i in 1..p {
                v.extend((0..i).map(|m| up(i, m) / up(i, i)));
            }
            v.push(model.pi[j].ln());
            v.extend_from_slice(&mu[p..d]);
            // B = U S_XY (p x 3); G = B^T.
            let b = |i: usize, ch: usize| {
                (0..=i).map(|m| u[packed_index(i, m)] * cov[packed_index(m, p + ch)]).sum::<f64>()
            };
            for ch in 0..3 {
                v.extend((0..p).map(|i| b(i, ch)));
            }
            for a in 0..3 {
                for c in 0..=a {
                    let btb: f64 = (0..p).map(|i| b(i, a) * b(i, c)).sum();
                    resid.push(cov[packed_index(p + a, p + c)] - btb);
                }
            }
        }
        Ok(Params { layout, template: model.clone(), extent, v, resid })
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    pub fn len(&self) -> usize {
        self.v.len() / self.layout.stride()
    }

    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }

    /// Offset of the log-diagonal, shears and ln pi within a kernel's values.
    pub(crate) fn offsets(&self) -> (usize, usize, usize) {
        let p = self.layout.p;
        (p, 2 * p, p + self.layout.tri())
    }

    /// U (packed lower, normalised coordinates) of kernel `j`.
    fn precision_factor(&self, j: usize) -> Vec<f64> {
        let p = self.layout.p;
        let (s_off, n_off, _) = self.offsets();
        let k = &self.v[j * self.layout.stride()..];
        let mut u = vec![0.0; self.layout.tri()];
        let mut shear = n_off;
        for i in 0..p {
            let diag = k[s_off + i].exp();
            u[packed_index(i, i)] = diag * self.extent[i];
            for m in 0..i {
                u[packed_index(i, m)] = diag * k[shear] * self.extent[m];
                shear += 1;
            }
        }
        u
    }

    /// The natural parameters of every kernel (see [`Layout`]).
    pub fn natural(&self) -> Vec<f64> {
        let (lay, p) = (self.layout, self.layout.p);
        let (_, _, theta) = self.offsets();
        let mut out = Vec::with_capacity(self.v.len());
        for j in 0..self.len() {
            let k = &self.v[j * lay.stride()..(j + 1) * lay.stride()];
            let u = self.precision_factor(j);
            out.extend((0..p).map(|i| k[i] / self.extent[i]));
            let logdet: f64 = (0..p).map(|i| u[packed_index(i, i)].ln()).sum();
            out.extend_from_slice(&u);
            out.push(k[theta] + logdet - p as f64 * HALF_LN_2PI);
            out.extend_from_slice(&k[lay.mu_y()..]);
        }
        out
    }

    /// The gradient with respect to these parameters from the natural gradient `grad`.
    pub fn chain(&self, grad: &[f64]) -> Vec<f64> {
        let (lay, p) = (self.layout, self.layout.p);
        let (s_off, n_off, theta) = self.offsets();
        let mut out = vec![0.0; self.v.len()];
        for j in 0..self.len() {
            let g = &grad[j * lay.stride()..(j + 1) * lay.stride()];
            let o = &mut out[j * lay.stride()..(j + 1) * lay.stride()];
            let k = &self.v[j * lay.stride()..];
            let u = self.precision_factor(j);
            let gc = g[lay.c()];
            for i in 0..p {
                o[i] = g[i] / self.extent[i];
                // Row i of U scales with exp(s_i); c holds ln U_ii = s_i + ln E_i.
                o[s_off + i] =
                    (0..=i).map(|m| g[lay.u() + packed_index(i, m)] * u[packed_index(i, m)]).sum::<f64>() + gc;
            }
            let mut shear = n_off;
            for i in 1..p {
                for m in 0..i {
                    o[shear] = g[lay.u() + packed_index(i, m)] * k[s_off + i].exp() * self.extent[m];
                    shear += 1;
                }
            }
            o[theta] = gc;
            o[lay.mu_y()..].copy_from_slice(&g[lay.mu_y()..]);
        }
        out
    }

    /// Adam's step size per value relative to the learning rate: centres move in pixels,
    /// the rest in their own units (log-scales, shears, ln pi, colours).
    fn step_scales(&self) -> Vec<f64> {
        let (lay, p) = (self.layout, self.layout.p);
        let (_, _, theta) = self.offsets();
        let mut one = vec![1.0; lay.stride()];
        one[..p].iter_mut().for_each(|s| *s = 20.0);
        one[theta] = 2.0;
        one[lay.mu_y()..lay.g()].iter_mut().for_each(|s| *s = 0.5);
        one.repeat(self.len())
    }

    /// One Adam step on these parameters from the natural gradient `grad` (chained to them),
    /// with the step scales and the clamps that keep the model valid; refine_adam.comp and
    /// refine_expand.comp are its f32 twin.
    pub(crate) fn adam_step(&mut self, adam: &mut Adam, grad: &[f64], lr: f64) {
        let chained = self.chain(grad);
        let scales = self.step_scales();
        adam.step(&mut self.v, &chained, lr, &scales);
        self.project();
    }

    /// The smallest log-diagonal `project` allows: a standard deviation of four times the
    /// largest extent.
    pub(crate) fn min_log_diag(&self) -> f64 {
        -(4.0 * self.extent.iter().cloned().fold(1.0, f64::max)).ln()
    }

    /// The largest ln pi over all kernels.
    pub(crate) fn max_theta(&self) -> f64 {
        let (lay, (_, _, theta)) = (self.layout, self.offsets());
        (0..self.len()).map(|j| self.v[j * lay.stride() + theta]).fold(f64::NEG_INFINITY, f64::max)
    }

    /// Clamps every value into the range that keeps the model valid in f32.
    fn project(&mut self) {
        let (lay, p) = (self.layout, self.layout.p);
        let (s_off, n_off, theta) = self.offsets();
        let (max_theta, min_log_diag) = (self.max_theta(), self.min_log_diag());
        for k in self.v.chunks_exact_mut(lay.stride()) {
            for i in 0..p {
                k[i] = k[i].clamp(-self.extent[i], 2.0 * self.extent[i]);
                k[s_off + i] = k[s_off + i].clamp(min_log_diag, MAX_LOG_DIAG);
            }
            k[n_off..theta].iter_mut().for_each(|n| *n = n.clamp(-MAX_SHEAR, MAX_SHEAR));
            k[theta] = k[theta].max(max_theta - PRIOR_RANGE);
            k[lay.mu_y()..lay.g()].iter_mut().for_each(|c| *c = c.clamp(-MAX_COLOUR, MAX_COLOUR));
            k[lay.g()..].iter_mut().for_each(|g| *g = g.clamp(-MAX_SLOPE, MAX_SLOPE));
        }
    }

    /// The model these parameters describe, valid: priors normalised, and where a kernel's
    /// joint covariance would not pass validation in f32 its conditional colour covariance
    /// (which rendering does not use) is widened. A kernel holding a non-finite value (one
    /// that diverged in f32 on the GPU) is left out: it cannot be rendered, and the others
    /// are the model; only when none is left is that an error.
    pub fn to_model(&self) -> Result<Model, ModelError> {
        let (lay, p) = (self.layout, self.layout.p);
        let d = p + 3;
        let (_, _, theta) = self.offsets();
        let kernel = |j: usize| &self.v[j * lay.stride()..(j + 1) * lay.stride()];
        let kept: Vec<usize> = (0..self.len()).filter(|&j| kernel(j).iter().all(|v| v.is_finite())).collect();
        if kept.is_empty() {
            return Err(ModelError::Invalid("every kernel holds a non-finite parameter".into()));
        }
        let max_theta = kept.iter().map(|&j| kernel(j)[theta]).fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = kept.iter().map(|&j| (kernel(j)[theta] - max_theta).exp()).sum();
        let mut m = Model { pi: Vec::new(), mu: Vec::new(), cov: Vec::new(), ..self.template.clone() };
        let mut resid = self.resid.clone();
        for &j in &kept {
            let k = kernel(j);
            m.pi.push((k[theta] - max_theta).exp() / total);
            m.mu.extend((0..p).map(|i| k[i] / self.extent[i]));
            m.mu.extend_from_slice(&k[lay.mu_y()..lay.g()]);
            self.push_covariance(&mut m, j, &resid[j * 6..(j + 1) * 6]);
        }
        // Validated as the binary file will hold it (f32), so the saved model loads; each
        // kernel that fails has its colour covariance widened, up to 32 times.
        let mut m = m.rounded_to_f32();
        let tri = packed_len(d);
        for (index, &j) in kept.iter().enumerate() {
            for _ in 0..32 {
                if m.check_kernel(index).is_ok() {
                    break;
                }
                for a in 0..3 {
                    resid[j * 6 + packed_index(a, a)] = resid[j * 6 + packed_index(a, a)].max(1e-4) * 4.0;
                }
                let mut fixed = Model { cov: Vec::new(), ..m.clone() };
                self.push_covariance(&mut fixed, j, &resid[j * 6..(j + 1) * 6]);
                let fixed = fixed.rounded_to_f32();
                m.cov[index * tri..(index + 1) * tri].copy_from_slice(&fixed.cov);
            }
        }
        m.validate().map(|()| m)
    }

    /// Appends kernel `j`'s joint covariance: S_XX = L L^T, S_XY = L G^T,
    /// S_YY = G G^T + `resid`.
    fn push_covariance(&self, m: &mut Model, j: usize, resid: &[f64]) {
        let (lay, p) = (self.layout, self.layout.p);
        let k = &self.v[j * lay.stride()..(j + 1) * lay.stride()];
        let g = |ch: usize, i: usize| k[lay.g() + ch * p + i];
        let l = invert_lower(&self.precision_factor(j), p);
        let lv = |i: usize, m: usize| if m <= i { l[packed_index(i, m)] } else { 0.0 };
        for a in 0..p + 3 {
            for b in 0..=a {
                let v = match (a < p, b < p) {
                    (true, true) => (0..p).map(|t| lv(a, t) * lv(b, t)).sum(),
                    (false, true) => (0..p).map(|t| lv(b, t) * g(a - p, t)).sum(),
                    _ => (0..p).map(|t| g(a - p, t) * g(b - p, t)).sum::<f64>() + resid[packed_index(a - p, b - p)],
                };
                m.cov.push(v);
            }
        }
    }
}

/// Adam's moments.
pub(crate) struct Adam {
    m: Vec<f64>,
    v: Vec<f64>,
    t: i32,
}

/// Adam's decay rates of the first and second moments.
const B1: f64 = 0.9;
const B2: f64 = 0.999;

impl Adam {
    pub(crate) fn new(n: usize) -> Adam {
        Adam { m: vec![0.0; n], v: vec![0.0; n], t: 0 }
    }

    /// Adam's bias corrections (1 - B1^t, 1 - B2^t) at step `t` (from 1).
    pub(crate) fn corrections(t: i32) -> (f64, f64) {
        (1.0 - B1.powi(t), 1.0 - B2.powi(t))
    }

    fn step(&mut self, x: &mut [f64], grad: &[f64], lr: f64, scales: &[f64]) {
        self.t += 1;
        let (c1, c2) = Adam::corrections(self.t);
        for i in 0..x.len() {
            self.m[i] = B1 * self.m[i] + (1.0 - B1) * grad[i];
            self.v[i] = B2 * self.v[i] + (1.0 - B2) * grad[i] * grad[i];
            let (mh, vh) = (self.m[i] / c1, self.v[i] / c2);
            x[i] -= lr * scales[i] * mh / (vh.sqrt() + 1e-12);
        }
    }
}

/// Refinement steps of a default fit: at 44 pixels a kernel on photos, 400 steps take no
/// more wall time than 200 did before the step got 2.7x cheaper, for +1.4 to +1.6 dB
/// (BENCHMARKS.md, "The refinement step").
pub const DEFAULT_REFINE_STEPS: usize = 400;

/// How to refine.
#[derive(Clone, Copy, Debug)]
pub struct RefineOptions {
    /// Adam steps (0: none).
    pub steps: usize,
    /// Base learning rate; decays along a cosine to a tenth of itself.
    pub lr: f64,
}

impl Default for RefineOptions {
    fn default() -> Self {
        RefineOptions { steps: DEFAULT_REFINE_STEPS, lr: 0.01 }
    }
}

impl RefineOptions {
    /// The learning rate of step `step`: a cosine from `lr` down to a tenth of it.
    pub(crate) fn lr_at(&self, step: usize) -> f64 {
        let t = step as f64 / self.steps as f64;
        self.lr * (0.1 + 0.45 * (1.0 + (std::f64::consts::PI * t).cos()))
    }
}
