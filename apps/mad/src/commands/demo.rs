//! `mad demo`: eight distortions of a sample photo scored, with images, maps and a summary.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;
use kit::CommonArgs;

#[derive(Args)]
pub struct DemoArgs {
    /// The folder to write into (created if missing)
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    common: CommonArgs,
}

pub fn run(args: DemoArgs) -> Result<()> {
    let DemoArgs { out, common } = args;
    kit::output::check_folder(&out, &[])?;
    let gpu = super::open_gpu(&common)?;
    let report = mad::demo::run(&out, gpu.as_ref()).with_context(|| format!("demo into {}", out.display()))?;
    kit::emit(&report, &[&out]);
    Ok(())
}
