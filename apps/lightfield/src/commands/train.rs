//! `lightfield train`: an ensemble of K dictionaries from example light fields.

use std::path::{Path, PathBuf};
use std::time::Instant;

use kit::stats::ms_since;
use lightfield::codes::Params;
use lightfield::dictionary::MAX_DICTIONARIES;
use lightfield::lightfield::LightField;
use lightfield::patch::{PatchGrid, PatchShape};
use lightfield::train::{TrainDevice, TrainOptions};
use lightfield::Result;

use super::{parse_epsilon, parse_grid};
use crate::records::TrainReport;

#[derive(clap::Args)]
pub struct TrainArgs {
    /// Training light fields: .npy files of shape (U, V, H, W, 3) or folders of view images (HCI input_CamNNN, Stanford out_YY_XX_*, ROW_COL names; else with --grid)
    #[arg(long, value_name = "PATH", num_args = 1.., required_unless_present = "dct")]
    input: Vec<PathBuf>,
    /// Number of dictionaries K in the ensemble
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=MAX_DICTIONARIES as i64), required_unless_present = "dct")]
    dictionaries: Option<u32>,
    /// Instead of training: write one dictionary of separable DCT-II bases for --patch (no inputs; at low rates on light fields unlike any training set, its fewer dictionary bytes and generic atoms beat a trained ensemble)
    #[arg(long, conflicts_with_all = ["input", "dictionaries", "precluster"])]
    dct: bool,
    /// Patch size HxWxUxV: pixel rows, pixel columns, view rows, view columns (each 1..=16)
    #[arg(long, default_value = "5x5x8x8", value_parser = parse_patch)]
    patch: PatchShape,
    /// Output dictionary ensemble (.lfd)
    #[arg(long, value_name = "FILE.lfd")]
    out: PathBuf,
    /// View grid UxV (rows x columns) of folders whose names follow no known layout (read in name order)
    #[arg(long, value_name = "UxV", value_parser = parse_grid)]
    grid: Option<(usize, usize)>,
    /// Assignment and update iterations after the initial HOSVD dictionaries
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=1000))]
    iterations: u32,
    /// RMSE per patch the assignment step encodes at (values in [0, 1])
    #[arg(long, default_value_t = 5e-3, value_parser = parse_epsilon)]
    epsilon: f32,
    /// Most coefficients per patch in the assignment step (default: patch samples / 8)
    #[arg(long, value_name = "T", value_parser = kit::cli::parse_count)]
    sparsity: Option<usize>,
    /// Seed of the random patch split and subset
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Train on a random subset of at most this many patches
    #[arg(long, default_value_t = 50_000, value_parser = kit::cli::parse_count)]
    max_patches: usize,
    /// Start each dictionary from a k-means cluster of the patches (TOG 2019's pre-clustering) instead of a random share
    #[arg(long)]
    precluster: bool,
    #[command(flatten)]
    common: kit::CommonArgs,
}

fn parse_patch(text: &str) -> Result<PatchShape, String> {
    PatchShape::parse(text).map_err(|e| e.to_string())
}

pub fn run(args: TrainArgs) -> Result<()> {
    let TrainArgs {
        input,
        dictionaries,
        patch,
        out,
        grid,
        iterations,
        epsilon,
        sparsity,
        seed,
        max_patches,
        precluster,
        dct,
        common,
    } = args;
    if dct {
        kit::output::check_file(&out, &["lfd"], &[])?;
        let ens = lightfield::dictionary::Ensemble::dct(patch);
        ens.write(&out)?;
        kit::emit(&crate::records::DctReport { dictionaries: ens.k, patch: patch.to_string() }, &[&out]);
        return Ok(());
    }
    let dictionaries = dictionaries.expect("clap requires --dictionaries without --dct");
    let params = Params { sparsity: sparsity.unwrap_or(patch.len() / 8).max(1), epsilon };
    let opts = TrainOptions {
        k: dictionaries as usize,
        shape: patch,
        iterations: iterations as usize,
        params,
        seed,
        max_patches,
        precluster,
    };
    let input_paths: Vec<&Path> = input.iter().map(PathBuf::as_path).collect();
    kit::output::check_file(&out, &["lfd"], &input_paths)?;
    opts.params.check(opts.shape.len())?;
    let lfs = input.iter().map(|p| LightField::read(p, grid)).collect::<lightfield::Result<Vec<_>>>()?;
    let ctx = common.context()?;
    let device = ctx.as_ref().map_or(TrainDevice::Cpu, TrainDevice::Gpu);
    let grids: Vec<PatchGrid> = lfs.iter().map(|lf| PatchGrid::new(opts.shape, lf.u, lf.v, lf.h, lf.w)).collect();
    if let Some(w) = grids.iter().find_map(PatchGrid::padding_warning) {
        kit::report::warn(&w);
    }
    let all: usize = grids.iter().map(PatchGrid::len).sum();
    // One step per assignment: after the initial dictionaries and after each update.
    let bar = kit::progress::bar(opts.iterations as u64 + 1, "train");
    let t0 = Instant::now();
    let mut last = None;
    let (ens, times) = lightfield::train::train(&lfs, &opts, device, |stats| {
        bar.suspend(|| kit::emit(stats, &[]));
        bar.inc(1);
        last = Some(stats.clone());
    })?;
    bar.finish_and_clear();
    ens.write(&out)?;
    let last = last.expect("training reports its final assignment");
    let report = TrainReport {
        dictionaries: ens.k,
        patch: opts.shape.to_string(),
        iterations: opts.iterations,
        training_patches: all.min(opts.max_patches),
        mean_coefficients: last.mean_coefficients,
        success_fraction: last.success_fraction,
        psnr_db: last.psnr_db,
        train_ms: ms_since(t0),
        times,
    };
    kit::emit(&report, &[&out]);
    Ok(())
}
