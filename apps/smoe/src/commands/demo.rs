//! `smoe demo`: a sample photo fitted (EM and refinement), rendered at 1x and 2x, and
//! everything written to a folder.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use kit::output::Staged;
use serde::Serialize;
use smoe::data::Grid;
use smoe::fit::{fit_kernels, FitProgress, FitSettings, Fitted, Init};
use smoe::gpu::{Mode, RenderSettings, Renderer};
use smoe::params::RefineOptions;

use super::{check_finite, stage_rgb};

#[derive(Args)]
pub struct DemoArgs {
    /// The folder to write (created if missing): smoe_input.png, smoe_model.json, two renders, smoe_summary.json
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    run: kit::cli::RunArgs,
}

/// The demo's record, also written as `smoe_summary.json`.
#[derive(Serialize)]
struct DemoRecord {
    #[serde(skip)]
    dir: PathBuf,
    input: &'static str,
    size: [usize; 2],
    kernels: usize,
    iterations: usize,
    refine_steps: usize,
    /// PSNR after EM, and after refinement (the saved model as rendered).
    em_psnr_db: f64,
    psnr_db: f64,
    em_ms: f64,
    refine_ms: f64,
    model: &'static str,
    renders: Vec<String>,
}

impl fmt::Display for DemoRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "smoe: fitted {} kernels to the {}x{} photo {}, PSNR {:.2} dB after EM, {:.2} dB after {} refinement steps; rendered 1x and 2x -> {}",
            self.kernels,
            self.size[0],
            self.size[1],
            DEMO_PHOTO.name,
            self.em_psnr_db,
            self.psnr_db,
            self.refine_steps,
            self.dir.display()
        )
    }
}

/// The demo's photo, the size it is fitted at, and its pixels per kernel (GaussianImage's
/// density on Kodak).
const DEMO_PHOTO: kit::photos::Photo = kit::photos::CHELSEA;
const DEMO_SIZE: (usize, usize) = (180, 120);
const DEMO_PIXELS_PER_KERNEL: usize = 44;

/// The files `smoe demo` writes into its folder.
const DEMO_FILES: [&str; 5] =
    ["smoe_input.png", "smoe_model.json", "smoe_summary.json", "smoe_render_1x.png", "smoe_render_2x.png"];

pub fn run(args: DemoArgs) -> Result<()> {
    let DemoArgs { out, run } = args;
    let dir = out.as_path();
    kit::output::check_folder(dir, &[])?;
    kit::output::check_files_in(dir, &DEMO_FILES)?;
    let ctx = run.context()?;
    let (w, h) = DEMO_SIZE;
    let grid = Grid::from_image(&DEMO_PHOTO.resized(w, h, 3)?);
    let (kernels, iterations) = (w * h / DEMO_PIXELS_PER_KERNEL, 20);
    let settings = FitSettings { iterations, init: Init::Kmeans, refine: RefineOptions { steps: 100, lr: 0.01 } };
    // The fit is most of the demo's seconds.
    let bar = kit::progress::bar((iterations + settings.refine.steps) as u64, "fit");
    let fitted = fit_kernels(Some(&ctx), &grid, kernels, &settings, &mut |e| {
        if !matches!(e, FitProgress::Start { .. }) {
            bar.inc(1);
        }
    })?;
    bar.finish_and_clear();
    let Fitted { model, report, psnr_db, em_psnr_db, refine_ms, .. } = fitted;
    let mut renderer = Renderer::new(&ctx, &model, Mode::Robust)?;
    let mut renders = Vec::new();
    for scale in [1usize, 2] {
        let (rw, rh) = (w * scale, h * scale);
        let (rgb, _) = renderer.render_rgb(RenderSettings::new(rw as u32, rh as u32))?;
        check_finite(&rgb, rw as u32)?;
        renders.push((format!("smoe_render_{scale}x.png"), rw, rh, rgb));
    }
    let record = DemoRecord {
        dir: dir.to_path_buf(),
        input: "smoe_input.png",
        size: [w, h],
        kernels,
        iterations,
        refine_steps: settings.refine.steps,
        em_psnr_db,
        psnr_db,
        em_ms: report.em_ms,
        refine_ms,
        model: "smoe_model.json",
        renders: renders.iter().map(|r| r.0.clone()).collect(),
    };
    let mut names = vec![record.input, record.model, "smoe_summary.json"];
    names.extend(renders.iter().map(|r| r.0.as_str()));
    debug_assert!(names.iter().all(|n| DEMO_FILES.contains(n)), "DEMO_FILES lists {names:?}");
    let mut staged = Staged::new();
    stage_rgb(&mut staged, &dir.join(record.input), "png", w, h, &grid.rgb)?;
    model.stage(&mut staged, &dir.join(record.model))?;
    for (name, rw, rh, rgb) in &renders {
        stage_rgb(&mut staged, &dir.join(name), "png", *rw, *rh, rgb)?;
    }
    staged.write_json(&dir.join("smoe_summary.json"), &record)?;
    staged.commit()?;
    let written: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).collect();
    let outs: Vec<&Path> = written.iter().map(PathBuf::as_path).collect();
    kit::emit(&record, &outs);
    Ok(())
}
