//! `composite demo`: a small generated scene rendered, encoded, composited and written.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct DemoArgs {
    /// Folder to write the demo's images, .ap files and summary.json into (created if missing)
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    run: kit::cli::RunArgs,
}

pub fn run(args: DemoArgs) -> Result<()> {
    kit::output::check_folder(&args.out, &[])?;
    let ctx = args.run.context()?;
    let report = composite::demo::run(&ctx, &args.out)?;
    kit::emit(&report, &[&args.out]);
    Ok(())
}
