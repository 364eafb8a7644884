//! `mosaic demo`: a photomosaic of a sample photo from tiles cut from the others.

use std::path::Path;

use anyhow::Result;

use super::args::DemoArgs;

pub fn run(args: DemoArgs) -> Result<()> {
    kit::output::check_folder(&args.out, &[])?;
    let ctx = args.common.open_one()?;
    let mut options = args.params.options(args.common.backend);
    options.spacing = args.params.spacing(mosaic::demo::GRID);
    let report = mosaic::demo::run(ctx.as_ref(), &args.out, &options)?;
    let files: Vec<&Path> = report.files.iter().map(|p| p.as_path()).collect();
    kit::emit(&report, &files);
    Ok(())
}
