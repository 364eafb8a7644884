//! `mad score`: one reference and distorted pair, on the CPU, one GPU, or its two stages on
//! two GPUs (`--split-stages`); whole, or in tiles where the pair is over the budget.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use kit::CommonArgs;
use mad::gpu::GpuMad;
use mad::report::ScoreReport;

#[derive(Args)]
pub struct ScoreArgs {
    /// The reference image (PNG, JPEG, TIFF, WebP or BMP; 8/16-bit; gray or RGB; at least 34x34)
    reference: PathBuf,
    /// The distorted image, the same size as the reference
    distorted: PathBuf,
    /// Write the detection, appearance and combined maps into this folder (NAME.png with a
    /// colour scale and NAME.npy, all six or none)
    #[arg(long, value_name = "DIR")]
    maps: Option<PathBuf>,
    /// Run the detection stage on the first `--device` and the appearance stage on the others
    /// (its 20 bands shared among them), at once: `--device 0,1`, `--device all`, or
    /// `--device 0,0` for two contexts on one GPU
    #[arg(long)]
    split_stages: bool,
    #[command(flatten)]
    common: CommonArgs,
}

/// Where `mad score` runs: the CPU, one GPU, or its two stages on two (`--split-stages`).
enum Scorer {
    Cpu,
    Gpu(Box<GpuMad>),
    /// Detection on the first, appearance on the others.
    Split(Vec<GpuMad>),
}

fn open_scorer(common: &CommonArgs, split_stages: bool) -> Result<Scorer> {
    if !split_stages {
        return Ok(super::open_gpu(common)?.map_or(Scorer::Cpu, |gpu| Scorer::Gpu(Box::new(gpu))));
    }
    if matches!(common.backend, kit::Backend::Cpu) {
        anyhow::bail!("--split-stages puts the two stages on two GPU devices; it does not apply to --backend cpu");
    }
    let contexts = kit::cli::open_each(common.device())?;
    if contexts.len() < 2 {
        anyhow::bail!(
            "--split-stages needs two devices, one per stage; --device {} names one (give --device 0,1, \
             or --device 0,0 for two contexts on one GPU)",
            common.device()
        );
    }
    Ok(Scorer::Split(contexts.iter().map(GpuMad::new).collect::<Result<_, _>>()?))
}

pub fn run(args: ScoreArgs) -> Result<()> {
    let ScoreArgs { reference, distorted, maps, split_stages, common } = args;
    let (reference, distorted, maps_dir) = (reference.as_path(), distorted.as_path(), maps.as_deref());
    if let Some(dir) = maps_dir {
        mad::maps::check(dir, &[reference, distorted])?;
    }
    let scorer = open_scorer(&common, split_stages)?;
    let want_maps = maps_dir.is_some();
    let (r, d) = mad::input::load_pair(reference, distorted, |w, h| match &scorer {
        // Whole where that fits the budget and the device, else in tiles (maps assembled).
        Scorer::Gpu(gpu) => gpu.check_pair_budget(w, h, want_maps),
        // Both devices' slots, when they share the host's memory (lavapipe).
        Scorer::Split(gpus) => gpus[0].check_budget(w, h, 1, gpus.len() as u64, want_maps),
        // Over the whole image where that fits the budget, else in tiles (maps assembled).
        Scorer::Cpu => mad::cpu::tiled::check_cpu(w, h, want_maps),
    })?;
    let (scores, maps, stages) = match &scorer {
        Scorer::Gpu(gpu) => {
            let (s, m) = gpu.score(&r, &d, want_maps)?;
            (s, m, None)
        }
        Scorer::Split(gpus) => {
            let gpus: Vec<&GpuMad> = gpus.iter().collect();
            let (s, m, t) = mad::gpu::score_split(&gpus, &r, &d, want_maps)?;
            (s, m, Some(t))
        }
        Scorer::Cpu => {
            let (s, m) = mad::cpu::score_with(&r, &d, want_maps)?;
            (s, m, None)
        }
    };
    if let (Some(dir), Some(maps)) = (maps_dir, &maps) {
        mad::maps::write_maps(dir, maps)?;
    }
    let outs: Vec<&Path> = maps_dir.into_iter().collect();
    kit::emit(&ScoreReport { scores, width: r.width, height: r.height, stages }, &outs);
    Ok(())
}
