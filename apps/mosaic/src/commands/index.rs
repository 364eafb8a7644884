//! `mosaic index`: a tile folder into its cache file.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use mosaic::compose;
use mosaic::index::{self, IndexParams};

use super::args::IndexArgs;
use super::report::IndexReport;
use super::warn;

pub fn run(args: IndexArgs) -> Result<()> {
    let start = Instant::now();
    let params = IndexParams { cells: (args.cells.0, args.cells.1), thumb: compose::thumb_size(args.aspect) };
    let cache_dir = args.cache.dir();
    let (tiles, stats) = index::index(&args.dir, &params, cache_dir.as_deref(), warn)?;
    let cache = stats.cache.clone();
    let index_ms = start.elapsed().as_secs_f64() * 1e3;
    let record = IndexReport { tiles: tiles.len(), stats, cache: cache.clone(), index_ms };
    let written: Vec<&Path> = cache.iter().map(|c| c.as_path()).collect();
    kit::emit(&record, &written);
    Ok(())
}
