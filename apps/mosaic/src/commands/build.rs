//! `mosaic build`: index, distances, solve and render, the image and its assignment CSV.

use std::path::Path;

use anyhow::{bail, Result};
use mosaic::compose::{self, CellLayout};
use mosaic::solve::{self, Method};
use mosaic::spacing::Spacing;

use super::args::BuildArgs;
use super::report::{BuildReport, CellTile};
use super::{check_not_tile, warn};

pub fn run(args: BuildArgs) -> Result<()> {
    kit::output::check_file(&args.out, kit::image::IMAGE_EXTENSIONS, &[&args.problem.target])?;
    check_not_tile(&args.out, &args.problem.tiles)?;
    if let Some(csv) = &args.assignment {
        kit::output::check_file(csv, &["csv"], &[&args.problem.target, &args.out])?;
        check_not_tile(csv, &args.problem.tiles)?;
    }
    check_tiles_named(&args.problem.tiles, args.assignment.is_some())?;
    let backend = args.common.backend;
    let ctx = args.common.open_one()?;
    let mut options = args.params.options(backend);
    let layout = args.problem.layout()?;
    let problem = args.problem.prepare()?;
    options.spacing = match (layout, &problem.blocks) {
        (CellLayout::Grid(grid), _) => args.params.spacing(grid),
        // Counted in --min-cell squares, on the grid the adaptive cells cover.
        (CellLayout::Adaptive(_), Some(blocks)) => args
            .params
            .min_distance
            .map(|distance| Spacing::adaptive(problem.grid.0, problem.grid.1, blocks, distance))
            .transpose()?,
        (CellLayout::Adaptive(_), None) => None,
    };
    problem.check_capacity(options.repeat)?;
    if let Some(spacing) = &options.spacing {
        spacing.check_fits(problem.patches.len(), problem.tiles.len())?;
    }
    let layout = problem.checked_layout(args.tile_px)?;
    kit::image::check_size(&args.out, layout.width() as u64, layout.height() as u64, kit::image::Layout::Rgb8)?;
    let d = problem.distances(backend, ctx.as_ref())?;
    let look = compose::Look { tile_px: args.tile_px, tint: args.tint as f32 };
    let built = compose::build(&problem, &d, args.method, &options, &look, ctx.as_ref())?;
    let cells = cell_tiles(&problem, &args.problem.tiles, &built.solved.assignment);
    // Before anything is written: a comparison that fails leaves no outputs behind.
    let exact_cost = match args.method {
        Method::Exact => Some(built.solved.cost),
        _ if args.compare_exact => Some(solve::run(Method::Exact, &d, &options, None)?.cost),
        _ => None,
    };
    let likeness = mosaic::likeness::Likeness::measure(&d, &built.solved.assignment);
    if let Some(text) = likeness.warning(options.repeat) {
        warn(&text);
    }
    // The image and the CSV land together or not at all.
    let mut staged = kit::output::Staged::new();
    let save = kit::image::SaveOptions { jpeg_quality: args.quality };
    let (w, h) = (built.layout.width(), built.layout.height());
    kit::image::stage(&mut staged, &args.out, w, h, &built.rgb, kit::image::Layout::Rgb8, save)?;
    if let Some(csv) = &args.assignment {
        staged.write(csv, |out| write_csv(out, &cells))?;
    }
    staged.commit()?;
    let record = BuildReport {
        method: args.method,
        metric: problem.metric,
        distance_backend: backend,
        solve_backend: args.method.backend(backend, options.repeat),
        render_backend: backend,
        cost: built.solved.cost,
        ratio_to_exact: exact_cost.and_then(|e| super::report::ratio_to_exact(built.solved.cost, e)),
        exact_cost,
        patches: d.rows,
        tiles: d.cols,
        tiles_used: built.solved.assignment.iter().collect::<std::collections::HashSet<_>>().len(),
        width: w,
        height: h,
        repeat: mosaic::matrix::effective_repeat(options.repeat, d.rows),
        min_distance: args.params.min_distance,
        lower_bound: built.solved.lower_bound,
        optimal: built.solved.optimal,
        gap: super::report::gap(built.solved.cost, built.solved.lower_bound),
        tint: args.tint,
        solve_ms: built.solved.solve_ms,
        render_ms: built.render_ms,
        index: problem.index_stats,
        likeness,
        out: args.out.clone(),
    };
    let mut written = vec![args.out.as_path()];
    written.extend(args.assignment.as_deref());
    kit::emit(&record, &written);
    Ok(())
}

/// Refuses, before any work, a tile folder whose path is not valid UTF-8 when `--assignment`
/// names each tile by it: the names would be lossy, naming no file. Tiles whose own names are
/// not UTF-8 are skipped by the index (docs/formats.md).
fn check_tiles_named(tiles: &Path, csv: bool) -> Result<()> {
    if tiles.to_str().is_none() && csv {
        bail!(
            "{tiles:?}: the tile folder's path is not valid UTF-8, and --assignment names every tile by it; \
             give the folder by a path that is (cd into it and pass --tiles ., or pass a symbolic link to it)"
        );
    }
    Ok(())
}

/// The tile shown in each cell (row-major), by its path: the tile folder as given, joined
/// with the tile's path inside it; with the cell's place on the grid (for adaptive cells,
/// its top-left cell of the smallest size) and its rectangle in target pixels.
fn cell_tiles(problem: &compose::Problem, tiles: &Path, assignment: &[usize]) -> Vec<CellTile> {
    let cols = problem.grid.0;
    assignment
        .iter()
        .enumerate()
        .map(|(k, &j)| {
            let (col, row) = match &problem.blocks {
                Some(blocks) => (blocks[k].col, blocks[k].row),
                None => (k % cols, k / cols),
            };
            CellTile {
                col,
                row,
                rect: problem.rects[k],
                tile: tiles.join(&problem.tiles.paths[j]).display().to_string(),
            }
        })
        .collect()
}

/// `col,row,x,y,w,h,tile` and one line per cell; a path with a comma, a quote or a line
/// break is quoted as RFC 4180 says.
fn write_csv(out: &mut impl std::io::Write, cells: &[CellTile]) -> std::io::Result<()> {
    writeln!(out, "col,row,x,y,w,h,tile")?;
    for cell in cells {
        let tile = if cell.tile.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", cell.tile.replace('"', "\"\""))
        } else {
            cell.tile.clone()
        };
        let (x, y, w, h) = cell.rect;
        writeln!(out, "{},{},{x},{y},{w},{h},{tile}", cell.col, cell.row)?;
    }
    Ok(())
}
