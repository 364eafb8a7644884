//! `smoe fit`: the start, EM (culled for images, with the PSNR in the progress bar) and
//! refinement at a given K, or the search for the smallest K that reaches `--psnr`. Memory
//! is estimated for the largest K before anything is allocated, and a fit the device cannot
//! hold is refused.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use serde::Serialize;
use smoe::cpu::em::fit_cpu;
use smoe::data::Grid;
use smoe::fit::{render_psnr, render_psnr_cpu, FitReport, Init};
use smoe::gpu::em::culled::{fit_gpu_culled, TILE};
use smoe::gpu::em::fit_gpu_from;
use smoe::memory::{device_local_bytes, fit_memory, FitMemory};
use smoe::model::{Model, MODEL_EXTENSIONS};
use smoe::refine::{refine_cpu, refine_gpu, RefineOptions};
use smoe::target::{smallest_kernels, start_kernels, Trial};

/// EM iterations between the renders that show the PSNR in the progress bar.
const PSNR_EVERY: usize = 5;

/// How many kernels to fit.
pub enum Kernels {
    /// Exactly this many.
    Count(usize),
    /// The smallest count (up to `max`, default a quarter of the samples) whose fit
    /// reaches `db`.
    Psnr { db: f64, max: Option<usize> },
}

/// How each fit runs.
pub struct FitSettings {
    pub iterations: usize,
    pub init: Init,
    pub refine: RefineOptions,
}

#[derive(Serialize)]
struct FitRecord {
    #[serde(skip)]
    out: PathBuf,
    kernels: usize,
    samples: usize,
    iterations: usize,
    init: Init,
    /// PSNR of the saved model as `smoe render` renders it (after refinement, if any).
    psnr_db: f64,
    /// PSNR after EM, before refinement.
    em_psnr_db: f64,
    refine_steps: usize,
    /// Mean joint log-likelihood per sample at the last E-step.
    loglik: Option<f64>,
    init_ms: f64,
    em_ms: f64,
    /// GPU time of the EM iterations.
    gpu_ms: Option<f64>,
    refine_ms: f64,
    /// Mean kernels per 16x16 tile at the last EM iteration (the culled EM of images).
    kernels_per_tile: Option<f64>,
    /// The device memory estimated before the fit (the largest phase; GPU only).
    device_bytes_estimate: Option<u64>,
    /// `--psnr`: the target, and every fit of the search (K and PSNR, in order).
    #[serde(skip_serializing_if = "Option::is_none")]
    psnr_target_db: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    trials: Vec<Trial>,
}

impl fmt::Display for FitRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "smoe: fitted {} kernels to {} samples in {} iterations ({:.0} ms of EM after a {:.0} ms {} start, PSNR {:.2} dB) and {} refinement steps ({:.0} ms), PSNR {:.2} dB -> {}",
            self.kernels,
            self.samples,
            self.iterations,
            self.em_ms,
            self.init_ms,
            // As `--init` spells it (`kmeans`, `grid`).
            clap::ValueEnum::to_possible_value(&self.init).map_or_else(String::new, |v| v.get_name().to_string()),
            self.em_psnr_db,
            self.refine_steps,
            self.refine_ms,
            self.psnr_db,
            self.out.display()
        )?;
        if let Some(target) = self.psnr_target_db {
            write!(f, " (the smallest K within 10% reaching {target} dB, {} fits)", self.trials.len())?;
        }
        Ok(())
    }
}

/// One fit at K and what the record reports of it.
pub(crate) struct Fitted {
    pub(crate) model: Model,
    report: FitReport,
    init_ms: f64,
    em_psnr_db: f64,
    refine_ms: f64,
    psnr_db: f64,
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// Fits `k` kernels to `grid`: the start, EM, refinement, and the PSNR of the model as
/// `smoe render` renders it.
pub(crate) fn fit_at(ctx: Option<&engine::Context>, grid: &Grid, k: usize, settings: &FitSettings) -> Result<Fitted> {
    let FitSettings { iterations, init, refine } = *settings;
    let start = Instant::now();
    let bar = kit::progress::bar(init.steps(k), &format!("start K={k}"));
    let first = init.model_on(ctx, grid, k, &mut || bar.inc(1))?;
    bar.finish_and_clear();
    let init_ms = ms(start);
    let bar = kit::progress::bar(iterations as u64, "EM");
    let tick = |_, ll: f64| {
        bar.set_message(format!("ll {ll:.3}"));
        bar.inc(1);
    };
    let (model, report) = match ctx {
        // Images: the culled EM, rendering the model every few iterations for the bar.
        Some(ctx) if grid.coord_dims() == 2 => {
            let mut psnr = None;
            fit_gpu_culled(ctx, grid, first, iterations, PSNR_EVERY, |step| {
                psnr = step.psnr_db.or(psnr);
                let shown = psnr.map_or(String::new(), |p: f64| format!(", PSNR {p:.2} dB"));
                bar.set_message(format!("ll {:.3}{shown}", step.loglik));
                bar.inc(1);
            })?
        }
        Some(ctx) => fit_gpu_from(ctx, grid, first, iterations, tick)?,
        None => fit_cpu(grid, first, iterations, tick)?,
    };
    bar.finish_and_clear();
    model.validate().context("the fit produced a model the readers would refuse")?;
    let psnr_of = |model: &Model| -> Result<f64> {
        Ok(match ctx {
            Some(ctx) => render_psnr(ctx, model, grid)?,
            None => render_psnr_cpu(model, grid),
        })
    };
    let em_psnr_db = psnr_of(&model)?;
    let (model, refine_ms) = if refine.steps == 0 {
        (model, 0.0)
    } else {
        let bar = kit::progress::bar(refine.steps as u64, "refine");
        let tick = |_, psnr: f64| {
            bar.set_message(format!("PSNR {psnr:.2} dB"));
            bar.inc(1);
        };
        let (refined, report) = match ctx {
            Some(ctx) => refine_gpu(ctx, &model, grid, refine, tick)?,
            None => refine_cpu(&model, grid, refine, tick)?,
        };
        bar.finish_and_clear();
        (refined, report.refine_ms)
    };
    // The PSNR of the model as saved and as `smoe render` renders it.
    let psnr_db = psnr_of(&model)?;
    Ok(Fitted { model, report, init_ms, em_psnr_db, refine_ms, psnr_db })
}

pub fn fit(input: &Path, kernels: Kernels, out: &Path, settings: FitSettings, common: &kit::CommonArgs) -> Result<()> {
    kit::output::check_file(out, MODEL_EXTENSIONS, &[input])?;
    let grid = Grid::load(input)?;
    let samples = grid.len();
    let largest = match kernels {
        Kernels::Count(k) => k,
        Kernels::Psnr { max, .. } => max.unwrap_or((samples / 4).max(1)),
    };
    if largest > samples {
        bail!("--kernels {largest} is more than the {samples} samples of {}", input.display());
    }
    let memory = fit_memory(&grid.extent, largest, TILE);
    kit::budget::check(memory.host_bytes, format!("fitting {largest} kernels to {}", input.display()))?;
    let ctx = common.context()?;
    if let Some(ctx) = &ctx {
        check_device_memory(ctx, &memory, samples, largest)?;
    }
    let (fitted, target, trials) = match kernels {
        Kernels::Count(k) => (fit_at(ctx.as_ref(), &grid, k, &settings)?, None, Vec::new()),
        Kernels::Psnr { db, .. } => {
            let search = smallest_kernels(start_kernels(samples, largest), largest, db, |k| {
                let fitted = fit_at(ctx.as_ref(), &grid, k, &settings)?;
                Ok::<_, anyhow::Error>((fitted.psnr_db, fitted))
            })?;
            match search {
                Ok(found) => (found.fit, Some(db), found.trials),
                Err(trials) => {
                    let best = trials.iter().map(|t| t.psnr_db).fold(f64::NEG_INFINITY, f64::max);
                    bail!(
                        "--psnr {db}: not reached with up to {largest} kernels (best {best:.2} dB); raise --kernels or lower the target"
                    );
                }
            }
        }
    };
    let Fitted { model, report, init_ms, em_psnr_db, refine_ms, psnr_db } = fitted;
    model.save(out)?;
    let tiles = grid.width().div_ceil(TILE as usize) * grid.height().div_ceil(TILE as usize);
    let record = FitRecord {
        out: out.to_path_buf(),
        kernels: model.len(),
        samples: report.samples,
        iterations: settings.iterations,
        init: settings.init,
        psnr_db,
        em_psnr_db,
        refine_steps: settings.refine.steps,
        loglik: report.loglik.last().copied(),
        init_ms,
        em_ms: report.em_ms,
        gpu_ms: report.gpu_ms,
        refine_ms,
        kernels_per_tile: report.list_entries.map(|e| e as f64 / tiles as f64),
        device_bytes_estimate: ctx.is_some().then_some(memory.device_bytes),
        psnr_target_db: target,
        trials,
    };
    kit::emit(&record, &[out]);
    Ok(())
}

/// Refuses a fit whose estimated device memory (or largest buffer) the device cannot hold,
/// before anything is allocated on it.
pub(crate) fn check_device_memory(
    ctx: &engine::Context,
    memory: &FitMemory,
    samples: usize,
    kernels: usize,
) -> Result<()> {
    let info = ctx.info();
    let what = format!("{samples} samples and {kernels} kernels");
    if let Some(heap) = device_local_bytes(info) {
        // A tenth of the heap is left to the driver and other processes.
        if memory.device_bytes > heap - heap / 10 {
            bail!(
                "fitting {what} needs about {} of device memory, more than the {} {} has; use fewer kernels or a smaller input",
                kit::budget::human(memory.device_bytes),
                kit::budget::human(heap),
                info.name
            );
        }
    }
    ctx.check_binding(memory.largest_buffer_bytes, &format!("fitting {what}"))?;
    Ok(())
}
