//! `mad`: the Most Apparent Distortion image quality metric on the command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::Subcommand;
use kit::CommonArgs;
use mad::gpu::GpuMad;
use mad::report::ScoreReport;

#[derive(Subcommand)]
enum Command {
    /// Score one pair: a reference image and a distorted version of it
    #[command(after_help = "Examples:\n  \
        mad score ref.png dist.jpg\n  \
        mad score ref.png dist.png --maps maps/ --json\n  \
        mad score ref.tif dist.tif --backend cpu\n  \
        mad score ref.png dist.png --split-stages --device 0,1\n  \
        mad score big_ref.png big_dist.png --max-memory 2G\n  \
        mad score big_ref.png big_dist.png --backend cpu --max-memory 2G\n\n\
        A pair whose whole-image scoring would go over --max-memory (on the GPU backend: host and\n\
        device memory together, and never over the device's) is scored in tiles of whole blocks\n\
        with a wrapped-around halo, as large as the budget allows: a bar shows the tiles; --maps\n\
        assembles the maps from them. The tiles' filters are the whole image's, so the scores agree\n\
        with whole-image scoring within about 1e-5 on the GPU (a 768-pixel halo; windows of sides\n\
        2^a 3^b 5^c, both stages in one) and 3e-5 on the CPU (a 512-pixel halo). --split-stages\n\
        refuses such a pair.")]
    Score {
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
    },
    /// Score many pairs: the lines of a CSV, or an IQA data set's folders paired by name
    #[command(after_help = "Examples:\n  \
        mad batch --pairs pairs.csv\n  \
        mad batch --pairs pairs.csv --json --device all\n  \
        mad batch --ref-dir csiq/src_imgs --dist-dir csiq/dst_imgs --out csiq.csv\n  \
        mad batch --ref-dir refs --dist-dir dist --pattern 'dist_{ref}_*' --out scores.jsonl --backend cpu\n\n\
        Folders pair by name as CSIQ (1600.AWGN.1.png against 1600.png), TID2013 (i01_01_1.bmp\n\
        against I01.BMP) and KADID-10k (I01_01_01.png against I01.png) name them: a distorted\n\
        image belongs to the reference whose name is its longest prefix followed by . _ or -.\n\
        With --out, rows are appended as pairs finish; running the same command again resumes.\n\
        A pair that cannot be scored gets a line with its error; the batch goes on and exits 1.")]
    Batch {
        /// CSV of `ref,dist` lines (UTF-8, paths relative to the CSV's folder; a first line
        /// `ref,dist` is a header, `#` starts a comment)
        #[arg(long, value_name = "CSV", required_unless_present = "ref_dir", conflicts_with_all = ["ref_dir", "dist_dir"])]
        pairs: Option<PathBuf>,
        /// Folder of reference images (searched up to 4 levels deep)
        #[arg(long, value_name = "DIR", requires = "dist_dir")]
        ref_dir: Option<PathBuf>,
        /// Folder of distorted images, each paired with its reference by name
        #[arg(long, value_name = "DIR", requires = "ref_dir")]
        dist_dir: Option<PathBuf>,
        /// How a distorted image's name holds its reference's: `{ref}` for the reference's
        /// name without extension, `*` for any text (default: the CSIQ/TID/KADID rule)
        #[arg(long, value_name = "PATTERN", requires = "ref_dir")]
        pattern: Option<mad::dataset::Pattern>,
        /// Results file, one row per pair: .csv or .jsonl; an existing results file is resumed
        /// (any other file is refused)
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Pairs per GPU chunk (default: about 64 MiB of spectra per chunk, fewer for a short
        /// batch). With `--device all` or a list such as `0,1` the pairs are split across those GPUs
        #[arg(long, value_name = "N", value_parser = kit::cli::parse_count)]
        chunk: Option<usize>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// How well scores agree with people: SROCC, KROCC, and PLCC and RMSE after the usual
    /// 4-parameter logistic mapping
    #[command(after_help = "Examples:\n  \
        mad correlate --scores csiq.csv --subjective csiq_dmos.csv\n  \
        mad correlate --scores kadid.jsonl --subjective kadid/dmos.csv --column dmos --json\n\n\
        The subjective file is a CSV with a header: a name column (dist, dist_img, image, name\n\
        or file) and a score column (--column, default the first of mos, dmos, score). Rows\n\
        match the results file's `dist` entries, or their file names.")]
    Correlate {
        /// A results file of `mad batch --out` (.csv or .jsonl)
        #[arg(long, value_name = "FILE")]
        scores: PathBuf,
        /// CSV of subjective scores (MOS or DMOS) per distorted image
        #[arg(long, value_name = "CSV")]
        subjective: PathBuf,
        /// The subjective score's column (default: the first of mos, dmos, score)
        #[arg(long, value_name = "NAME")]
        column: Option<String>,
        #[command(flatten)]
        report: kit::cli::ReportArgs,
    },
    /// The benchmark set (512x512 latency, 1000-pair throughput, 1920x1080, an 8000x8000 pair in tiles under 2 GiB), one JSON line each
    #[command(after_help = "Examples:\n  mad bench\n  mad bench --quick --device 0")]
    Bench {
        #[command(flatten)]
        args: kit::BenchArgs,
    },
    /// Score eight distortions of a sample photo (two strengths each), write images, maps and a JSON summary
    #[command(after_help = "Examples:\n  mad demo --out demo/\n  mad demo --out demo/ --backend cpu --json")]
    Demo {
        /// The folder to write into (created if missing)
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        #[command(flatten)]
        common: CommonArgs,
    },
}

/// The MAD pipelines on the `--device` GPU, or `None` on the CPU backend.
fn open_gpu(common: &CommonArgs) -> Result<Option<GpuMad>> {
    Ok(match common.context()? {
        Some(ctx) => Some(GpuMad::new(&ctx)?),
        None => None,
    })
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
        return Ok(open_gpu(common)?.map_or(Scorer::Cpu, |gpu| Scorer::Gpu(Box::new(gpu))));
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

fn score(
    reference: &Path,
    distorted: &Path,
    maps_dir: Option<&Path>,
    split_stages: bool,
    common: &CommonArgs,
) -> Result<()> {
    if let Some(dir) = maps_dir {
        mad::maps::check(dir, &[reference, distorted])?;
    }
    let scorer = open_scorer(common, split_stages)?;
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

/// Where a batch's pairs come from.
enum PairSource<'a> {
    Csv(&'a Path),
    Folders { refs: &'a Path, dists: &'a Path, pattern: Option<&'a mad::dataset::Pattern> },
}

fn batch(source: PairSource<'_>, out: Option<&Path>, chunk: Option<usize>, common: &CommonArgs) -> Result<()> {
    let inputs: Vec<&Path> = match &source {
        PairSource::Csv(csv) => vec![csv],
        PairSource::Folders { refs, dists, .. } => vec![refs, dists],
    };
    if let Some(out) = out {
        mad::results::check(out, &inputs)?;
    }
    let pairs = match source {
        PairSource::Csv(csv) => mad::pairs::read(csv)?,
        PairSource::Folders { refs, dists, pattern } => {
            let matched = mad::dataset::pair_folders(refs, dists, pattern)?;
            if !matched.unmatched.is_empty() {
                eprintln!(
                    "mad: warning: {} image(s) in {} match no reference and are skipped (first: {})",
                    matched.unmatched.len(),
                    dists.display(),
                    matched.unmatched[0].display()
                );
            }
            if let Some(first) = matched.not_utf8.first() {
                eprintln!(
                    "mad: warning: {} image(s) whose names are not valid UTF-8 are skipped (first: {first:?}): \
                     pairs are matched and named by name; rename them to score them",
                    matched.not_utf8.len()
                );
            }
            matched.pairs
        }
    };
    let results = out.map(mad::results::Results::open).transpose()?;
    if let Some(r) = results.as_ref().filter(|r| r.resumed() > 0) {
        eprintln!("mad: resuming: {} pair(s) already scored in {}", r.resumed(), r.path().display());
    }
    let gpus = match common.backend {
        kit::Backend::Gpu => {
            kit::cli::open_each(common.device())?.iter().map(GpuMad::new).collect::<Result<Vec<_>, _>>()?
        }
        kit::Backend::Cpu => Vec::new(),
    };
    Ok(mad::batch::run(pairs, chunk, gpus, results)?)
}

fn correlate(scores: &Path, subjective: &Path, column: Option<&str>) -> Result<()> {
    let metric = mad::results::read_scores(scores)?;
    let people = mad::correlate::read_subjective(subjective, column)?;
    let report = mad::correlate::join_and_agree(&metric, &people)?;
    kit::emit(&report, &[]);
    Ok(())
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Score { reference, distorted, maps, split_stages, common } => {
            score(&reference, &distorted, maps.as_deref(), split_stages, &common)
        }
        Command::Batch { pairs, ref_dir, dist_dir, pattern, out, chunk, common } => {
            let source = match (&pairs, &ref_dir, &dist_dir) {
                (Some(csv), _, _) => PairSource::Csv(csv),
                (None, Some(refs), Some(dists)) => PairSource::Folders { refs, dists, pattern: pattern.as_ref() },
                _ => anyhow::bail!("give --pairs CSV, or --ref-dir and --dist-dir"),
            };
            batch(source, out.as_deref(), chunk, &common)
        }
        Command::Correlate { scores, subjective, column, .. } => correlate(&scores, &subjective, column.as_deref()),
        Command::Bench { args } => {
            let ctx = kit::cli::open(&args.device)?;
            Ok(mad::bench::run(&ctx, args.quick)?)
        }
        Command::Demo { out, common } => {
            kit::output::check_folder(&out, &[])?;
            let gpu = open_gpu(&common)?;
            let report = mad::demo::run(&out, gpu.as_ref()).with_context(|| format!("demo into {}", out.display()))?;
            kit::emit(&report, &[&out]);
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let app = clap::Command::new("mad")
        .about("The Most Apparent Distortion image quality metric (Larson & Chandler 2010), exact, on the GPU");
    kit::main_subcommands(app, env!("CARGO_PKG_VERSION"), run)
}
