//! `composite sweep`: every shape of the GPU encoder on rendered frames.

use anyhow::Result;

use super::print_fields;

pub fn run(args: kit::BenchArgs) -> Result<()> {
    Ok(composite::sweep::run(&kit::cli::open(&args.device)?, args.quick, print_fields)?)
}
