//! What both encoders take and produce: the encode's parameters, each patch's error budget
//! and quantisation step ([`Limit`]), and every patch's encoding ([`Codes`]).

use crate::error::{LfError, Result};

/// Sparsity and error threshold of one encode.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Most coefficients a patch may keep (T).
    pub sparsity: usize,
    /// Largest RMSE of a patch, values in [0, 1] (epsilon).
    pub epsilon: f32,
}

/// The quantisation step is tied to epsilon: step = 2 epsilon sqrt(valid / P). A kept
/// coefficient costs at most (step/2)^2 after quantisation, a dropped one its value
/// squared, and only coefficients of magnitude at least step/2 are ever kept (a dead zone
/// of half a step each side). The encoder meets a patch's budget of valid * epsilon^2 (or
/// its [`BUDGET_FRACTION`]) by dropping its smallest coefficients, so a step finer than the errors it is held to only
/// spends bits on levels: at 2 epsilon, against epsilon, the levels of the rendered 9x9
/// scenes take 14-18% fewer bytes and the file 7-8% at the same PSNR (BENCHMARKS.md).
/// Keeping every non-zero level leaves at most P (step/2)^2 = valid * epsilon^2: the whole
/// budget, which its f32 rounding margin makes unreachable only if nearly every coefficient
/// rounds at the worst point (rounding errors spread over the step leave about a third). At
/// step = epsilon (`.lfc` version 2, [`STEP_PER_EPSILON_V2`]) the bound was a quarter, so a
/// patch always met its budget once T allowed every non-zero level; now it does in
/// practice, and a patch that does not is reported as over epsilon like any capped one.
pub const STEP_PER_EPSILON: f32 = 2.0;

/// The step per epsilon of `.lfc` version 2 files (read, never written).
pub const STEP_PER_EPSILON_V2: f32 = 1.0;

/// Quantisation step of a patch with `valid` of its `len` samples inside the light field,
/// from the base step (that of a whole patch). Encoder and decoder compute it alike.
pub fn patch_step(base: f32, valid: usize, len: usize) -> f32 {
    base * (valid as f32 / len as f32).sqrt()
}

/// The share of a patch's error budget the encoder spends ([`Limit::budget`]): it keeps the
/// largest coefficients until the error is within a quarter of the budget (RMSE half of
/// epsilon), and epsilon still bounds every patch below T (keeping every non-zero level
/// leaves at most the whole budget, see [`STEP_PER_EPSILON`]). Dropping coefficients up to
/// the whole budget spends the bits where they gain least: it fills every patch's error to
/// epsilon, however little its dropped coefficients save, where a uniform quantiser
/// distributes the error by what each coefficient costs. On the rendered 9x9 scenes (DCT,
/// 8x8x9x9) a quarter against the whole: BD-rate -6..-9% and +0.2..0.3 dB at 0.3 bits per
/// pixel; a tenth or none (every non-zero level kept) lose at low rates (BENCHMARKS.md).
pub const BUDGET_FRACTION: f32 = 0.25;

/// Smallest epsilon accepted: below it the f32 rounding margin of [`budget`] can exceed
/// the budget of a border patch.
pub const MIN_EPSILON: f32 = 1e-3;

impl Params {
    pub fn check(&self, patch_len: usize) -> Result<()> {
        if !(MIN_EPSILON..=1.0).contains(&self.epsilon) || !self.epsilon.is_finite() {
            return Err(LfError::Epsilon { epsilon: self.epsilon, min: MIN_EPSILON });
        }
        if self.sparsity == 0 || self.sparsity > patch_len {
            return Err(LfError::Sparsity { sparsity: self.sparsity, samples: patch_len });
        }
        Ok(())
    }

    /// The quantisation step of a whole patch.
    pub fn base_step(&self) -> f32 {
        self.epsilon * STEP_PER_EPSILON
    }
}

/// Squared-error budget of a patch with `valid` samples inside the light field and norm
/// `norm`: epsilon^2 * valid (so the RMSE over its real samples is at most epsilon, padding
/// counted as error too), less a margin for f32 rounding in the n-mode products of the
/// encoder and the decoder (4 ulp of the patch norm per matrix row summed).
pub fn budget(epsilon: f32, valid: usize, norm: f64, mode_sum: usize) -> f32 {
    let margin = norm * mode_sum as f64 * (2f64).powi(-22);
    let limit = (epsilon as f64 * (valid as f64).sqrt() - margin).max(0.0);
    (limit * limit) as f32
}

/// Every patch's encoding: dictionary, kept coefficient locations (ascending) and levels.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Codes {
    pub membership: Vec<u32>,
    /// Whether the patch met its error budget within the sparsity.
    pub success: Vec<bool>,
    /// Squared error of the patch in coefficient space (padding included).
    pub errors: Vec<f32>,
    /// Patch `p`'s coefficients are `offsets[p]..offsets[p+1]` of `locations`/`levels`.
    pub offsets: Vec<usize>,
    pub locations: Vec<u32>,
    pub levels: Vec<i32>,
}

impl Codes {
    pub fn len(&self) -> usize {
        self.membership.len()
    }

    pub fn is_empty(&self) -> bool {
        self.membership.is_empty()
    }

    pub fn count(&self, p: usize) -> usize {
        self.offsets[p + 1] - self.offsets[p]
    }

    /// Appends `other` (the codes of the following patches).
    pub fn extend(&mut self, other: Codes) {
        let base = self.locations.len();
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.membership.extend(other.membership);
        self.success.extend(other.success);
        self.errors.extend(other.errors);
        self.offsets.extend(other.offsets.iter().skip(1).map(|o| o + base));
        self.locations.extend(other.locations);
        self.levels.extend(other.levels);
    }

    /// A copy of patches `range` (offsets from 0).
    pub fn slice(&self, range: std::ops::Range<usize>) -> Codes {
        let (c0, c1) = (self.offsets[range.start], self.offsets[range.end]);
        Codes {
            membership: self.membership[range.clone()].to_vec(),
            success: self.success[range.clone()].to_vec(),
            errors: self.errors[range.clone()].to_vec(),
            offsets: self.offsets[range.start..=range.end].iter().map(|o| o - c0).collect(),
            locations: self.locations[c0..c1].to_vec(),
            levels: self.levels[c0..c1].to_vec(),
        }
    }
}

/// Per-patch limits: squared-error budget ([`BUDGET_FRACTION`] of [`budget`]) and quantisation step (with its reciprocal, so
/// both encoders quantise with bit-identical arithmetic). 16 bytes, as the GPU reads them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Limit {
    pub budget: f32,
    pub step: f32,
    pub inv_step: f32,
    pub pad: f32,
}

impl Limit {
    /// Limits of a patch with `valid` of its `len` samples inside the light field.
    pub fn new(params: Params, valid: usize, len: usize, norm: f64, mode_sum: usize) -> Limit {
        let step = patch_step(params.base_step(), valid, len);
        let budget = BUDGET_FRACTION * budget(params.epsilon, valid, norm, mode_sum);
        Limit { budget, step, inv_step: 1.0 / step, pad: 0.0 }
    }
}
