//! `mosaic distance`: the distance matrix of a target and a tile folder.

use std::time::Instant;

use anyhow::Result;

use super::args::DistanceArgs;
use super::check_not_tile;
use super::report::DistanceReport;

pub fn run(args: DistanceArgs) -> Result<()> {
    kit::output::check_file(&args.out, &["npy"], &[&args.problem.target])?;
    check_not_tile(&args.out, &args.problem.tiles)?;
    let ctx = args.common.open_one()?;
    let problem = args.problem.prepare()?;
    let start = Instant::now();
    let d = problem.distances(args.common.backend, ctx.as_ref())?;
    let distance_ms = start.elapsed().as_secs_f64() * 1e3;
    kit::npy::write_f32(&args.out, &[d.rows, d.cols], &d.to_f32())?;
    let record = DistanceReport {
        metric: problem.metric,
        patches: d.rows,
        tiles: d.cols,
        index: problem.index_stats,
        distance_ms,
    };
    kit::emit(&record, &[&args.out]);
    Ok(())
}
