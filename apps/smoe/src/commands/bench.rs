//! `smoe bench`: the benchmark set ([`crate::bench`]) on one GPU, one JSON line each.

use anyhow::Result;

use crate::bench;

// No group of its own: the flattened `kit::BenchArgs` already takes the name `BenchArgs`.
#[derive(clap::Args)]
#[group(skip)]
pub struct BenchArgs {
    #[command(flatten)]
    bench: kit::BenchArgs,
    /// Which measurements: all, render (Table 4 and the tile-list build alone) or fit
    #[arg(long, value_enum, default_value_t = bench::Set::All)]
    set: bench::Set,
}

pub fn run(args: BenchArgs) -> Result<()> {
    bench::run(&kit::cli::open(&args.bench.device)?, args.bench.quick, args.set)
}
