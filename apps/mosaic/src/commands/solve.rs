//! `mosaic solve`: the assignment for a distance matrix.

use anyhow::Result;
use kit::Backend;
use mosaic::solve;
use mosaic::DistanceMatrix;

use super::args::SolveArgs;
use super::report::SolveReport;

pub fn run(args: SolveArgs) -> Result<()> {
    // greedy, anneal and exact have no GPU path: they run on the CPU, and the envelope says so.
    let backend = args.method.backend(args.common.backend, args.params.repeat());
    kit::report::set_backend(backend);
    let mut options = args.params.options(backend);
    if args.params.min_distance.is_some() {
        let grid =
            args.grid.ok_or_else(|| kit::Usage("--min-distance needs --grid COLSxROWS: the cells' places".into()))?;
        options.spacing = args.params.spacing(grid);
    }
    let d = DistanceMatrix::load_npy(&args.distance)?;
    d.check_capacity(options.repeat).map_err(|e| anyhow::anyhow!("{}: {e}", args.distance.display()))?;
    let ctx = match backend {
        Backend::Gpu => Some(kit::cli::open_one(args.common.device())?),
        Backend::Cpu => None,
    };
    let solved = solve::run(args.method, &d, &options, ctx.as_ref())?;
    kit::emit(&SolveReport::new(&solved, &d, &options), &[]);
    Ok(())
}
