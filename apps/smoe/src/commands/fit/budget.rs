//! `smoe fit --bpp B` / `--bytes N`: the `.smc` file of the smallest error within a byte
//! budget ([`smoe::smc_fit`]): fits at a few kernel counts, each pruned, its step scale
//! bisected to the budget and refined with the quantiser in the loop.
//! The record's PSNR is the decoded file's, rendered as `smoe render` renders it.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde::Serialize;
use smoe::data::Grid;
use smoe::fit::{model_psnr, FitSettings};
use smoe::params::RefineOptions;
use smoe::refine::refine_gpu_quantised;
use smoe::smc_fit::{fit_to_budget, largest_kernels, refine_quantised_cpu, Calls, Trial};

use super::{fit_at, prepare, Prepared};

/// The byte budget of a fit.
#[derive(Clone, Copy, Debug)]
pub enum Budget {
    /// Bits per pixel (of every view).
    Bpp(f64),
    Bytes(usize),
}

/// How the budget search runs.
pub struct BudgetSettings {
    pub budget: Budget,
    /// The most kernels a fit may have (default: a quarter of the samples).
    pub max_kernels: Option<usize>,
    /// Fits of the kernel-count search.
    pub trials: usize,
    /// Quantisation-aware refinement after each fit (0 steps: none).
    pub qat: RefineOptions,
}

#[derive(Serialize)]
struct BudgetRecord {
    #[serde(skip)]
    out: PathBuf,
    /// The budget in bytes, and the file's length and bits per pixel (of every view).
    budget_bytes: usize,
    bytes: usize,
    bpp: f64,
    /// Kernels in the file (after pruning).
    kernels: usize,
    samples: usize,
    step_scale: f64,
    steps: smoe::codec::StepsRecord,
    /// PSNR of the decoded file, rendered.
    psnr_db: f64,
    /// Steps of quantisation-aware refinement per fit.
    qat_steps: usize,
    /// Every fit of the search: kernels fitted and coded, bytes, step scale, PSNR.
    trials: Vec<Trial>,
}

impl fmt::Display for BudgetRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "smoe: {} kernels in {} bytes ({:.3} bpp, budget {} bytes, step scale {:.3}), decoded PSNR {:.2} dB, after {} fits -> {}",
            self.kernels,
            self.bytes,
            self.bpp,
            self.budget_bytes,
            self.step_scale,
            self.psnr_db,
            self.trials.len(),
            self.out.display()
        )
    }
}

pub fn fit(
    input: &Path,
    out: &Path,
    settings: FitSettings,
    budget: BudgetSettings,
    common: &kit::CommonArgs,
) -> Result<()> {
    let format = kit::output::check_file(out, smoe::model::MODEL_EXTENSIONS, &[input])?;
    if format != "smc" {
        bail!("--bpp and --bytes write the compact format: {} must end in .smc", out.display());
    }
    let mut shape = (0, 0, 0);
    let largest_of = |grid: &Grid| {
        let samples = grid.len();
        let budget_bytes = match budget.budget {
            Budget::Bpp(bpp) => (bpp * samples as f64 / 8.0).floor() as usize,
            Budget::Bytes(n) => n,
        };
        let max = budget.max_kernels.unwrap_or(samples / 4).clamp(1, samples);
        shape = (samples, budget_bytes, max);
        Ok(largest_kernels(budget_bytes, grid.coord_dims(), max, budget.trials))
    };
    let Prepared { grid, ctx, .. } = prepare(input, largest_of, common)?;
    let (samples, budget_bytes, max) = shape;
    let p = grid.coord_dims();
    let qat = budget.qat;
    let calls = Calls {
        fit: |k| Ok::<_, anyhow::Error>(fit_at(ctx.as_ref(), &grid, k, &settings)?.model),
        refine_quantised: |model: &smoe::model::Model, steps: &smoe::codec::Steps| {
            Ok(match &ctx {
                _ if qat.steps == 0 => model.clone(),
                Some(ctx) => refine_gpu_quantised(ctx, model, &grid, qat, Some(steps), |_, _| {})?.0,
                None => refine_quantised_cpu(model, &grid, steps, qat)?.0,
            })
        },
        psnr: |model: &smoe::model::Model| Ok(model_psnr(ctx.as_ref(), model, &grid)?),
    };
    let found = fit_to_budget(budget_bytes, p, max, budget.trials, calls)?;
    let mut staged = kit::output::Staged::new();
    staged.write(out, |w| std::io::Write::write_all(w, &found.bytes))?;
    staged.commit()?;
    let record = BudgetRecord {
        out: out.to_path_buf(),
        budget_bytes,
        bytes: found.bytes.len(),
        bpp: found.bytes.len() as f64 * 8.0 / samples as f64,
        kernels: found.model.len(),
        samples,
        step_scale: found.step_scale,
        steps: smoe::codec::Steps::scaled(found.step_scale).record(),
        psnr_db: found.psnr_db,
        qat_steps: qat.steps,
        trials: found.trials,
    };
    kit::emit(&record, &[out]);
    Ok(())
}
