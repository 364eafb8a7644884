//! `mad correlate`: how well a results file's scores agree with subjective ones.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct CorrelateArgs {
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
}

pub fn run(args: CorrelateArgs) -> Result<()> {
    let metric = mad::results::read_scores(&args.scores)?;
    let people = mad::correlate::read_subjective(&args.subjective, args.column.as_deref())?;
    let report = mad::correlate::join_and_agree(&metric, &people)?;
    kit::emit(&report, &[]);
    Ok(())
}
