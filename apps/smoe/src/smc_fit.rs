//! Fitting to a byte budget: the kernel count and the step scale that give the smallest
//! error of the decoded file within the budget.
//!
//! For a kernel count K the caller's fit gives a model; kernels with a negligible prior are
//! pruned ([`prune`]); the finest step scale whose file fits the budget is bisected
//! ([`encode_within`]); quantisation-aware refinement at those steps follows (the caller's,
//! e.g. [`refine_quantised_cpu`]), and the scale is bisected again for the refined model.
//! The error is that of the decoded file, rendered. K is searched from an estimate of the
//! bits a kernel costs, by factors of [`K_FACTOR`] (down first), for at most `trials` fits.

use serde::Serialize;

use crate::codec::{decode, encode_within, prune, quantised, CodecError, Steps};
use crate::data::Grid;
use crate::model::{Model, ModelError};
use crate::params::{Params, RefineOptions};
use crate::refine::{refine, RefineReport};

/// The bits a kernel of `p` coordinates costs at the step scales budgets pick, for the
/// first K the search tries: on photos at 0.5-2 bpp, 48 bits a kernel gave step scales of
/// 1.5-2.3 and 1.5 times as many kernels (scales 3-5) 2-4 dB less.
pub fn bits_per_kernel(p: usize) -> f64 {
    if p == 2 {
        64.0
    } else {
        128.0
    }
}

/// The first K the search tries.
fn first_kernels(budget: usize, p: usize, max_kernels: usize) -> usize {
    ((budget as f64 * 8.0 / bits_per_kernel(p)) as usize).clamp(1, max_kernels.max(1))
}

/// The most kernels [`fit_to_budget`] may fit with these arguments (for estimating memory
/// before it runs).
pub fn largest_kernels(budget: usize, p: usize, max_kernels: usize, trials: usize) -> usize {
    let k = first_kernels(budget, p, max_kernels) as f64 * K_FACTOR.powi(trials.saturating_sub(2) as i32);
    (k.ceil() as usize).clamp(1, max_kernels.max(1))
}

/// The factor between the kernel counts the search tries.
pub const K_FACTOR: f64 = 1.5;

/// One fit of the search.
#[derive(Clone, Debug, Serialize)]
pub struct Trial {
    /// The kernels fitted, and those left after pruning (the file's).
    pub kernels: usize,
    pub coded_kernels: usize,
    pub bytes: usize,
    pub step_scale: f64,
    /// PSNR of the decoded file, rendered.
    pub psnr_db: f64,
}

/// The best fit within the budget.
pub struct Fitted {
    pub bytes: Vec<u8>,
    /// The decoded file.
    pub model: Model,
    pub step_scale: f64,
    pub psnr_db: f64,
    /// Every fit of the search, in order.
    pub trials: Vec<Trial>,
}

/// What the search calls: `fit(k)` fits k kernels; `refine_quantised(model, steps)` refines
/// with the quantiser in the loop; `psnr(model)` is the decoded model's rendered PSNR.
pub struct Calls<F, Q, P> {
    pub fit: F,
    pub refine_quantised: Q,
    pub psnr: P,
}

/// Searches K (at most `max_kernels`) and the step scale for the smallest error within
/// `budget` bytes, with at most `trials` fits (at least 1). Fails when even one kernel does
/// not fit the budget.
pub fn fit_to_budget<E, F, Q, P>(
    budget: usize,
    p: usize,
    max_kernels: usize,
    trials: usize,
    mut calls: Calls<F, Q, P>,
) -> Result<Fitted, E>
where
    E: From<CodecError> + From<ModelError>,
    F: FnMut(usize) -> Result<Model, E>,
    Q: FnMut(&Model, &Steps) -> Result<Model, E>,
    P: FnMut(&Model) -> Result<f64, E>,
{
    let max_kernels = max_kernels.max(1);
    let mut k = first_kernels(budget, p, max_kernels);
    let mut best: Option<Fitted> = None;
    let mut log: Vec<Trial> = Vec::new();
    // Down by K_FACTOR (fewer kernels, finer steps) while that improves, then (once) up
    // from the best.
    let (mut factor, mut turned) = (1.0 / K_FACTOR, false);
    for _ in 0..trials.max(1) {
        if log.iter().any(|t| t.kernels == k) {
            break;
        }
        let model = (calls.fit)(k)?;
        match within(&model, budget, &mut calls.refine_quantised)? {
            None => {
                // Too many kernels even at the coarsest steps: every larger K is too.
                log.push(Trial { kernels: k, coded_kernels: 0, bytes: 0, step_scale: f64::NAN, psnr_db: f64::NAN });
                turned |= factor > 1.0;
                factor = 1.0 / K_FACTOR;
            }
            Some((bytes, step_scale, decoded)) => {
                let psnr_db = (calls.psnr)(&decoded)?;
                let coded_kernels = decoded.len();
                log.push(Trial { kernels: k, coded_kernels, bytes: bytes.len(), step_scale, psnr_db });
                if best.as_ref().is_none_or(|b| psnr_db > b.psnr_db) {
                    best = Some(Fitted { bytes, model: decoded, step_scale, psnr_db, trials: Vec::new() });
                } else if turned {
                    break;
                } else {
                    (factor, turned) = (K_FACTOR, true);
                    k = log
                        .iter()
                        .find(|t| Some(t.psnr_db) == best.as_ref().map(|b| b.psnr_db))
                        .map_or(k, |t| t.kernels);
                }
            }
        }
        k = ((k as f64 * factor).round() as usize).clamp(1, max_kernels);
    }
    match best {
        Some(mut b) => {
            b.trials = log;
            Ok(b)
        }
        None => Err(CodecError::Invalid(format!("no model of at least one kernel fits in {budget} bytes")).into()),
    }
}

/// The file of `model` within `budget` (pruned, scale bisected, refined with the quantiser,
/// bisected again) and its step scale and decoded model; None when it does not fit.
fn within<E, Q>(model: &Model, budget: usize, refine_quantised: &mut Q) -> Result<Option<(Vec<u8>, f64, Model)>, E>
where
    E: From<CodecError> + From<ModelError>,
    Q: FnMut(&Model, &Steps) -> Result<Model, E>,
{
    let pruned = prune(&Params::from_model(model)?);
    let Some((_, scale)) = encode_within(&pruned, budget)? else { return Ok(None) };
    let refined = refine_quantised(&pruned.to_model()?, &Steps::scaled(scale))?;
    let params = prune(&Params::from_model(&refined)?);
    let Some((bytes, scale)) = encode_within(&params, budget)? else { return Ok(None) };
    let decoded = decode(&bytes)?;
    Ok(Some((bytes, scale, decoded)))
}

/// Quantisation-aware refinement on the CPU: [`refine`] with the loss and gradient of the
/// f64 twin evaluated at the quantised parameters and applied to the unquantised ones (a
/// straight-through estimate of the quantiser's gradient); returns the model whose
/// quantised parameters rendered best.
pub fn refine_quantised_cpu(
    model: &Model,
    grid: &Grid,
    steps: &Steps,
    options: RefineOptions,
) -> Result<(Model, RefineReport), ModelError> {
    let eval = |params: &Params| {
        let q = quantised(params, steps);
        Ok::<_, ModelError>(crate::cpu::refine::loss_and_grad(q.layout(), &q.natural(), grid))
    };
    refine(model, grid, options, eval, |_, _| {})
}
