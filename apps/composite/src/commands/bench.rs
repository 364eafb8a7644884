//! `composite bench`: the paper's Tables 1 and 2 on the GPU.

use anyhow::Result;

pub fn run(args: kit::BenchArgs) -> Result<()> {
    let ctx = kit::cli::open(&args.device)?;
    // Each JSON line as it comes.
    Ok(composite::bench::run(&ctx, args.quick, |value| kit::emit(&kit::report::Fields(value), &[]))?)
}
