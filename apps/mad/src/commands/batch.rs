//! `mad batch`: many pairs, from a CSV or from an IQA data set's folders paired by name,
//! in chunks across the GPUs (or on the CPU), appended to a results file that a second run
//! resumes.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use kit::CommonArgs;
use mad::gpu::GpuMad;

#[derive(Args)]
pub struct BatchArgs {
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
}

/// Where a batch's pairs come from.
enum PairSource<'a> {
    Csv(&'a Path),
    Folders { refs: &'a Path, dists: &'a Path, pattern: Option<&'a mad::dataset::Pattern> },
}

pub fn run(args: BatchArgs) -> Result<()> {
    let BatchArgs { pairs, ref_dir, dist_dir, pattern, out, chunk, common } = args;
    let source = match (&pairs, &ref_dir, &dist_dir) {
        (Some(csv), _, _) => PairSource::Csv(csv),
        (None, Some(refs), Some(dists)) => PairSource::Folders { refs, dists, pattern: pattern.as_ref() },
        _ => anyhow::bail!("give --pairs CSV, or --ref-dir and --dist-dir"),
    };
    batch(source, out.as_deref(), chunk, &common)
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
