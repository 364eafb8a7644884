//! `smoe fit`: the start, EM (culled for images, with the PSNR in the progress bar) and
//! refinement at a given K, or the search for the smallest K that reaches `--psnr`; to a
//! byte budget (`--bpp`, `--bytes`) in [`budget`]. Memory is estimated for the largest K
//! before anything is allocated, and a fit the device cannot hold is refused.

mod budget;

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use kit::progress::ProgressBar;
use serde::Serialize;
use smoe::data::Grid;
use smoe::fit::{fit_kernels, model_psnr, FitProgress, FitSettings, Fitted, Init};
use smoe::gpu::em::culled::TILE;
use smoe::memory::{check_device, fit_memory, FitMemory};
use smoe::model::MODEL_EXTENSIONS;
use smoe::params::RefineOptions;
use smoe::target::{smallest_kernels, start_kernels, Trial};

use super::{parse_bpp, parse_within};

#[derive(Args)]
pub struct FitArgs {
    /// The input: an image (PNG, JPEG, TIFF, WebP or BMP) or a light field .npy (U, V, H, W, 3): float32/float64 in [0, 1], or uint8/uint16 scaled to it
    input: PathBuf,
    /// Number of kernels K (at most the number of samples, and 2^24); with --psnr, --bpp or --bytes, the most the search may use (default: a quarter of the samples)
    #[arg(long, value_parser = parse_kernels, required_unless_present_any = ["psnr", "bpp", "bytes"])]
    kernels: Option<usize>,
    /// Fit to a quality instead of a count: the smallest K (within 10%) whose fit reaches this PSNR in dB, 1..=100, found by fits at doubling K, then halving the gap
    #[arg(long, value_parser = parse_psnr, conflicts_with_all = ["bpp", "bytes"])]
    psnr: Option<f64>,
    /// Fit to a file size instead: the .smc file (--out must end in .smc) of the smallest error within this many bits per pixel (of every view), in (0, 64]; the kernel count and the quantisation are searched
    #[arg(long, value_parser = parse_bpp, conflicts_with = "bytes")]
    bpp: Option<f64>,
    /// Like --bpp, a budget in bytes
    #[arg(long, value_parser = kit::cli::parse_count)]
    bytes: Option<usize>,
    /// --bpp/--bytes: fits of the kernel-count search (each at 1.5x or 1/1.5x the best so far), 1..=20
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
    budget_fits: u32,
    /// --bpp/--bytes: steps of refinement with the quantiser in the loop (loss and gradient of the quantised model, applied to the unquantised one) after each fit, 0..=100000
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    qat_steps: u32,
    /// The model file: .json, or the binary format for .smoe/.bin
    #[arg(long)]
    out: PathBuf,
    /// EM iterations, 1..=100000
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    iterations: u32,
    /// Starting kernels
    #[arg(long, value_enum, default_value_t = Init::Kmeans)]
    init: Init,
    /// Steps of gradient descent (Adam) on the rendered image's error after EM, 0..=100000; 0 switches refinement off
    #[arg(long, default_value_t = smoe::params::DEFAULT_REFINE_STEPS as u32, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    refine_steps: u32,
    /// Refinement's learning rate (centres move up to 20x this in pixels per step), in (0, 1]
    #[arg(long, default_value_t = 0.01, value_parser = parse_rate)]
    refine_lr: f64,
    #[command(flatten)]
    common: kit::CommonArgs,
}

/// The learning rate of quantisation-aware refinement: a third of refinement's default, as
/// it starts from a refined model.
const QAT_LR: f64 = 0.003;

fn parse_rate(text: &str) -> Result<f64, String> {
    parse_within(text, |v| v > 0.0 && v <= 1.0, |v| format!("{v} is not in (0, 1]"))
}

fn parse_psnr(text: &str) -> Result<f64, String> {
    parse_within(text, |v| (1.0..=100.0).contains(&v), |v| format!("{v} dB is not in 1..=100"))
}

fn parse_kernels(text: &str) -> Result<usize, String> {
    let k = kit::cli::parse_count(text)?;
    if k as u64 > smoe::model::MAX_KERNELS {
        return Err(format!("{k} kernels; a model holds at most {}", smoe::model::MAX_KERNELS));
    }
    Ok(k)
}

pub fn run(args: FitArgs) -> Result<()> {
    let FitArgs {
        input,
        kernels,
        psnr,
        bpp,
        bytes,
        budget_fits,
        qat_steps,
        out,
        iterations,
        init,
        refine_steps,
        refine_lr,
        common,
    } = args;
    let refine = RefineOptions { steps: refine_steps as usize, lr: refine_lr };
    let settings = FitSettings { iterations: iterations as usize, init, refine };
    let budget = match (bpp, bytes) {
        (Some(b), _) => Some(budget::Budget::Bpp(b)),
        (_, Some(n)) => Some(budget::Budget::Bytes(n)),
        _ => None,
    };
    if let Some(budget) = budget {
        let budget = budget::BudgetSettings {
            budget,
            max_kernels: kernels,
            trials: budget_fits as usize,
            qat: RefineOptions { steps: qat_steps as usize, lr: QAT_LR },
        };
        return budget::fit(&input, &out, settings, budget, &common);
    }
    let kernels = match (psnr, kernels) {
        (Some(db), max) => Kernels::Psnr { db, max },
        (None, k) => Kernels::Count(k.ok_or_else(|| anyhow::anyhow!("--kernels or --psnr is needed"))?),
    };
    fit(&input, kernels, &out, settings, &common)
}

/// How many kernels to fit.
enum Kernels {
    /// Exactly this many.
    Count(usize),
    /// The smallest count (up to `max`, default a quarter of the samples) whose fit
    /// reaches `db`.
    Psnr { db: f64, max: Option<usize> },
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

/// The progress bars of one fit: one per phase (start, EM, refinement), each replacing the last.
#[derive(Default)]
struct Bars {
    phase: Option<(u8, ProgressBar)>,
    psnr: Option<f64>,
}

impl Bars {
    /// The bar of `phase`, made when the phase begins.
    fn of(&mut self, phase: u8, len: u64, name: &str) -> &ProgressBar {
        if self.phase.as_ref().is_none_or(|(p, _)| *p != phase) {
            if let Some((_, bar)) = self.phase.take() {
                bar.finish_and_clear();
            }
            self.phase = Some((phase, kit::progress::bar(len, name)));
        }
        &self.phase.as_ref().expect("just set").1
    }

    fn show(&mut self, event: FitProgress) {
        match event {
            FitProgress::Start { kernels, total, .. } => self.of(0, total, &format!("start K={kernels}")).inc(1),
            FitProgress::Em { total, loglik, psnr_db, .. } => {
                self.psnr = psnr_db.or(self.psnr);
                let shown = self.psnr.map_or(String::new(), |p| format!(", PSNR {p:.2} dB"));
                let bar = self.of(1, total as u64, "EM");
                bar.set_message(format!("ll {loglik:.3}{shown}"));
                bar.inc(1);
            }
            FitProgress::Refine { total, psnr_db, .. } => {
                let bar = self.of(2, total as u64, "refine");
                bar.set_message(format!("PSNR {psnr_db:.2} dB"));
                bar.inc(1);
            }
        }
    }
}

impl Drop for Bars {
    fn drop(&mut self) {
        if let Some((_, bar)) = self.phase.take() {
            bar.finish_and_clear();
        }
    }
}

/// Fits `k` kernels to `grid`, with progress bars.
fn fit_at(ctx: Option<&engine::Context>, grid: &Grid, k: usize, settings: &FitSettings) -> Result<Fitted> {
    let mut bars = Bars::default();
    Ok(fit_kernels(ctx, grid, k, settings, &mut |e| bars.show(e))?)
}

/// The input of a fit, loaded (with a warning where alpha hides pixels), and the device,
/// once the largest fit (`largest(samples)` kernels) is known to fit the host budget and the
/// device's memory, before anything is allocated for it.
fn prepare(input: &Path, largest: impl FnOnce(&Grid) -> Result<usize>, common: &kit::CommonArgs) -> Result<Prepared> {
    let (grid, translucent) = Grid::load_noting_alpha(input)?;
    if let Some(n) = translucent.filter(|&n| n > 0) {
        kit::report::warn(&format!(
            "{}: {n} of {} pixels are not fully opaque; alpha is ignored, so the fit models the colours stored under them (flatten the image onto a background first to fit what it shows)",
            input.display(),
            grid.len()
        ));
    }
    let samples = grid.len();
    let largest = largest(&grid)?;
    let memory = fit_memory(&grid.extent, largest, TILE);
    kit::budget::check(memory.host_bytes, format!("fitting {largest} kernels to {}", input.display()))?;
    let ctx = common.context()?;
    if let Some(ctx) = &ctx {
        check_device(ctx, &memory, samples, largest)?;
    }
    Ok(Prepared { grid, ctx, largest, memory })
}

/// What [`prepare`] found: the input, the device (None for `--backend cpu`), the largest K
/// and its memory estimate.
struct Prepared {
    grid: Grid,
    ctx: Option<engine::Context>,
    largest: usize,
    memory: FitMemory,
}

fn fit(input: &Path, kernels: Kernels, out: &Path, settings: FitSettings, common: &kit::CommonArgs) -> Result<()> {
    kit::output::check_file(out, MODEL_EXTENSIONS, &[input])?;
    let largest_of = |grid: &Grid| {
        let samples = grid.len();
        let largest = match kernels {
            Kernels::Count(k) => k,
            Kernels::Psnr { max, .. } => max.unwrap_or((samples / 4).max(1)),
        };
        if largest > samples {
            bail!("--kernels {largest} is more than the {samples} samples of {}", input.display());
        }
        Ok(largest)
    };
    let Prepared { grid, ctx, largest, memory } = prepare(input, largest_of, common)?;
    let samples = grid.len();
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
    // A .smc file holds the model quantised: the PSNR reported is the file's.
    let psnr_db = if kit::output::format_of(out, MODEL_EXTENSIONS)? == "smc" {
        model_psnr(ctx.as_ref(), &smoe::model::Model::load(out)?, &grid)?
    } else {
        psnr_db
    };
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
