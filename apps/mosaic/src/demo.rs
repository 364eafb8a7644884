//! `mosaic demo`: generates a target and a few hundred tiles (seeded) in a temporary folder,
//! builds the mosaic with SoftAssign and with the exact solver (and greedy for reference),
//! and writes the images and a JSON summary.

use std::path::Path;
use std::time::Instant;

use engine::Context;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use crate::compose::{self, Dims};
use crate::error::{MosaicError, Result};
use crate::solve::{Method, SolveOptions};
use crate::synth::SmoothField;

const GRID: Dims = Dims(16, 12);
const CELLS: Dims = Dims(4, 4);
const TILES: usize = 320;
const TILE_IMAGE_PX: usize = 48;
const TARGET: (usize, usize) = (480, 360);
const TILE_PX: usize = 32;

/// Writes `count` tiles into two subfolders of `dir`.
fn write_tiles(dir: &Path, count: usize, rng: &mut ChaCha8Rng) -> Result<()> {
    for k in 0..count {
        let sub = dir.join(if k % 2 == 0 { "even" } else { "odd" });
        std::fs::create_dir_all(&sub).map_err(|e| MosaicError::file(&sub, e))?;
        let rgb = SmoothField::random(rng, 2).render(TILE_IMAGE_PX, TILE_IMAGE_PX, 0.05, rng);
        engine::io::save_png_rgb8(&sub.join(format!("tile_{k:04}.png")), TILE_IMAGE_PX, TILE_IMAGE_PX, &rgb)?;
    }
    Ok(())
}

/// Runs the demo into `out`; returns the summary (also written to `out/summary.json`).
pub fn run(ctx: &Context, out: &Path, options: &SolveOptions) -> Result<serde_json::Value> {
    let start = Instant::now();
    std::fs::create_dir_all(out).map_err(|e| MosaicError::file(out, e))?;
    let tmp = tempfile::tempdir().map_err(|e| MosaicError::file(std::env::temp_dir(), e))?;
    let mut rng = ChaCha8Rng::seed_from_u64(2011);
    let target_rgb = SmoothField::random(&mut rng, 8).render(TARGET.0, TARGET.1, 0.03, &mut rng);
    let target = out.join("target.png");
    engine::io::save_png_rgb8(&target, TARGET.0, TARGET.1, &target_rgb)?;
    let tiles = tmp.path().join("tiles");
    write_tiles(&tiles, TILES, &mut rng)?;

    let problem = compose::prepare(&target, &tiles, GRID, CELLS, |_| {})?;
    let d = problem.distances(options.backend, Some(ctx))?;
    let mut results = serde_json::Map::new();
    let mut exact_cost = f64::NAN;
    for method in [Method::Exact, Method::Softassign, Method::Greedy] {
        let built = compose::build(&problem, &d, method, options, TILE_PX, Some(ctx))?;
        let path = out.join(format!("mosaic_{}.png", method.name()));
        engine::io::save_png_rgb8(&path, built.layout.width(), built.layout.height(), &built.rgb)?;
        if method == Method::Exact {
            exact_cost = built.solved.cost;
        }
        results.insert(
            method.name().into(),
            json!({
                "cost": built.solved.cost, "ratio_to_exact": built.solved.cost / exact_cost,
                "seconds": built.solved.seconds, "image": path.file_name().map(|f| f.to_string_lossy().into_owned()),
            }),
        );
    }
    let summary = json!({
        "demo": "mosaic", "grid": format!("{}x{}", GRID.0, GRID.1), "patches": d.rows, "tiles": d.cols,
        "cells": format!("{}x{}", CELLS.0, CELLS.1), "device": ctx.info().name, "backend": options.backend,
        "softassign_params": options.softassign, "methods": results, "seconds": start.elapsed().as_secs_f64(),
    });
    let text = serde_json::to_string_pretty(&summary).unwrap_or_default();
    let path = out.join("summary.json");
    engine::io::write_atomic(&path, |w| {
        use std::io::Write;
        w.write_all(text.as_bytes())
            .map_err(|e| engine::EngineError::File { path: path.clone(), message: e.to_string() })
    })?;
    Ok(summary)
}
