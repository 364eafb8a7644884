//! `composite bench`: the paper's Tables 1 and 2 on the GPU.

use anyhow::Result;

use super::print_fields;

pub fn run(args: kit::BenchArgs) -> Result<()> {
    Ok(composite::bench::run(&kit::cli::open(&args.device)?, args.quick, print_fields)?)
}
