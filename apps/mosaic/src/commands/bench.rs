//! `mosaic bench`: the benchmarks, or with `--costs` the exact solvers on cost matrices.

use anyhow::Result;

use super::args::BenchCmd;

/// The sizes of `mosaic bench --costs` without `--size`: the photomosaic sizes and
/// two squares.
const COST_SIZES: [(usize, usize); 4] = [(2048, 8192), (4096, 16384), (4096, 4096), (10000, 10000)];

pub fn run(args: BenchCmd) -> Result<()> {
    if let Some(dir) = &args.costs {
        kit::output::check_folder(dir, &[])?;
    }
    let ctx = kit::cli::open_one(&args.bench.device)?;
    if let Some(dir) = &args.costs {
        let sizes = if args.sizes.is_empty() { COST_SIZES.to_vec() } else { args.sizes.clone() };
        mosaic::costs::run(&ctx, dir, &sizes, args.skip_cpu, |record| kit::emit(record, &[record.file.as_path()]))?;
        return Ok(());
    }
    let options = mosaic::bench::Options { quick: args.bench.quick, sizes: args.sizes, skip_cpu: args.skip_cpu };
    mosaic::bench::run(&ctx, &options, |record| kit::emit(record, &[]))?;
    Ok(())
}
