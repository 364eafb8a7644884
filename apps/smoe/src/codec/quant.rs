//! The quantiser: every optimised parameter ([`Params`]) rounded to a multiple of its
//! group's step, within the range refinement keeps it in, ln pi relative to the largest.

use crate::model::MAX_EXTENT;
use crate::params::{Params, MAX_COLOUR, MAX_LOG_DIAG, MAX_SHEAR, MAX_SLOPE, PRIOR_RANGE};

use super::CodecError;

/// The parameter groups, each with a step of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// The centre in pixels (views for a light field's u, v).
    Centre,
    /// The log-diagonal of the precision factor in pixel units.
    LogDiag,
    /// The precision factor's shears relative to its diagonal.
    Shear,
    /// ln pi, less the largest ln pi of the model.
    Prior,
    /// mu_Y, the expert's colour at the centre.
    Colour,
    /// G, the expert's colour change per standard deviation.
    Slope,
}

pub const GROUPS: usize = 6;

impl Group {
    pub const ALL: [Group; GROUPS] =
        [Group::Centre, Group::LogDiag, Group::Shear, Group::Prior, Group::Colour, Group::Slope];

    /// The group of value `i` of a kernel's optimised parameters with `p` coordinates.
    pub fn of(p: usize, i: usize) -> Group {
        let tri = p * (p + 1) / 2;
        match i {
            _ if i < p => Group::Centre,
            _ if i < 2 * p => Group::LogDiag,
            _ if i < p + tri => Group::Shear,
            _ if i == p + tri => Group::Prior,
            _ if i < p + tri + 4 => Group::Colour,
            _ => Group::Slope,
        }
    }
}

/// Step sizes, one per group ([`Group::ALL`]'s order), as f32 (the file holds them so).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Steps(pub [f32; GROUPS]);

/// Steps are within this range, so every quantised value's integer is below 2^30.
pub const MIN_STEP: f32 = 1e-4;
pub const MAX_STEP: f32 = 1e3;

impl Steps {
    /// The steps at scale 1: a quarter pixel, a tenth in log-size, 0.07 in shear, 0.2 in
    /// ln pi, 1/32 in colour and 1/24 in colour slope. Measured on fitted photos, each value
    /// quantised so costs about the same squared error (the allocation that minimises the
    /// error for the bits at fine steps).
    pub const BASE: [f64; GROUPS] = [0.25, 0.1, 0.07, 0.2, 1.0 / 32.0, 1.0 / 24.0];
    /// The range of scales [`Steps::scaled`] accepts: every step within MIN_STEP..=MAX_STEP.
    pub const SCALES: (f64, f64) = (1.0 / 128.0, 1024.0);

    /// [`Steps::BASE`] times `scale` (clamped to [`Steps::SCALES`]).
    pub fn scaled(scale: f64) -> Steps {
        let scale = scale.clamp(Self::SCALES.0, Self::SCALES.1);
        Steps(Self::BASE.map(|b| (b * scale) as f32))
    }

    /// The scale of `quality` (1..=100): 2^((50 - quality) / 10), so 50 is scale 1 and
    /// every 10 more halves every step.
    pub fn quality_scale(quality: u32) -> f64 {
        2f64.powf((50.0 - quality as f64) / 10.0)
    }

    /// The steps by name, for records.
    pub fn record(&self) -> StepsRecord {
        let [centre, log_diag, shear, prior, colour, slope] = self.0;
        StepsRecord { centre, log_diag, shear, prior, colour, slope }
    }

    pub fn check(&self) -> Result<(), CodecError> {
        match self.0.iter().position(|s| !(MIN_STEP..=MAX_STEP).contains(s)) {
            Some(g) => Err(CodecError::Invalid(format!(
                "the {:?} step {} is outside {MIN_STEP:e}..={MAX_STEP:e}",
                Group::ALL[g],
                self.0[g]
            ))),
            None => Ok(()),
        }
    }
}

/// [`Steps`] by group name.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct StepsRecord {
    pub centre: f32,
    pub log_diag: f32,
    pub shear: f32,
    pub prior: f32,
    pub colour: f32,
    pub slope: f32,
}

/// The quantiser of one model shape: per value index of a kernel, its step and the integer
/// range [lo, hi] (lo <= 0 <= hi) whose multiples of the step lie in the value's range.
pub struct Quantiser {
    pub p: usize,
    pub stride: usize,
    step: Vec<f64>,
    pub lo: Vec<i64>,
    pub hi: Vec<i64>,
}

/// The smallest log-diagonal refinement keeps (see [`Params::min_log_diag`]).
fn min_log_diag(extent: &[usize]) -> f64 {
    -(4.0 * extent.iter().map(|&e| e as f64).fold(1.0, f64::max)).ln()
}

impl Quantiser {
    /// `extent` holds p sizes in 1..=[`MAX_EXTENT`] and `steps` passed [`Steps::check`].
    pub fn new(extent: &[usize], steps: &Steps) -> Quantiser {
        let p = extent.len();
        let stride = crate::params::Layout { p }.stride();
        let (mut step, mut lo, mut hi) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..stride {
            let group = Group::of(p, i);
            let (min, max) = match group {
                Group::Centre => (-(extent[i] as f64), 2.0 * extent[i] as f64),
                Group::LogDiag => (min_log_diag(extent), MAX_LOG_DIAG),
                Group::Shear => (-MAX_SHEAR, MAX_SHEAR),
                Group::Prior => (-PRIOR_RANGE, 0.0),
                Group::Colour => (-MAX_COLOUR, MAX_COLOUR),
                Group::Slope => (-MAX_SLOPE, MAX_SLOPE),
            };
            let s = steps.0[group as usize] as f64;
            step.push(s);
            lo.push((min / s).ceil() as i64);
            hi.push((max / s).floor() as i64);
        }
        debug_assert!(extent.iter().all(|&e| e as u64 <= MAX_EXTENT));
        Quantiser { p, stride, step, lo, hi }
    }

    /// The integers of every kernel's values (`stride` per kernel), ln pi relative to the
    /// largest; each rounded to the nearest multiple of its step within its range.
    pub fn quantise(&self, params: &Params) -> Vec<i64> {
        let theta = self.p + self.p * (self.p + 1) / 2;
        let max_theta = params.max_theta();
        let mut q = Vec::with_capacity(params.v.len());
        for k in params.v.chunks_exact(self.stride) {
            for (i, &v) in k.iter().enumerate() {
                let v = if i == theta { v - max_theta } else { v };
                // NaN casts to 0; the clamp keeps infinities in range.
                q.push(((v / self.step[i]).round() as i64).clamp(self.lo[i], self.hi[i]));
            }
        }
        q
    }

    /// The value of integer `q` at index `i`.
    pub fn value(&self, i: usize, q: i64) -> f64 {
        q as f64 * self.step[i]
    }

    /// The values of [`Quantiser::quantise`]'s integers.
    pub fn values(&self, q: &[i64]) -> Vec<f64> {
        q.iter().enumerate().map(|(n, &q)| self.value(n % self.stride, q)).collect()
    }
}

/// `params` as the file stores them: every value quantised with `steps` (ln pi relative to
/// the largest), the rest (the colour covariances refinement keeps) unchanged.
pub fn quantised(params: &Params, steps: &Steps) -> Params {
    let quantiser = Quantiser::new(&params.template.extent, steps);
    Params { v: quantiser.values(&quantiser.quantise(params)), ..params.clone() }
}
