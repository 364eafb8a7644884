//! `lightfield demo`: two light fields of photo layers, one trained on, the other encoded
//! and decoded; the views, files and a JSON summary written into a folder.

use std::path::PathBuf;

use lightfield::Result;

#[derive(clap::Args)]
pub struct DemoArgs {
    /// Output folder: dictionaries.lfd, lightfield.lfc, center_original.png, center_decoded.png, summary.json
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    run: kit::cli::RunArgs,
}

pub fn run(args: DemoArgs) -> Result<()> {
    let DemoArgs { out, run } = args;
    let out = out.as_path();
    kit::output::check_folder(out, &[])?;
    kit::output::check_files_in(out, &lightfield::demo::FILES)?;
    let ctx = run.context()?;
    let spinner = kit::progress::spinner("demo");
    let report = lightfield::demo::run(out, &ctx)?;
    spinner.finish_and_clear();
    kit::emit(&report, &[out]);
    Ok(())
}
