//! `mad bench`: the benchmark set on one GPU, one JSON line each.

use anyhow::Result;

pub fn run(args: kit::BenchArgs) -> Result<()> {
    let ctx = kit::cli::open(&args.device)?;
    Ok(mad::bench::run(&ctx, args.quick)?)
}
