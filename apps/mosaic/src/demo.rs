//! `mosaic demo`: a photomosaic of one sample photo (the astronaut of kit::photos) from tiles
//! cut from the others (seeded crops at random places and scales, in a temporary folder),
//! built with the exact solver, greedy and (on a GPU) SoftAssign; writes the images and a
//! JSON summary.

use std::io::Write;
use std::path::{Path, PathBuf};

use engine::Context;
use kit::photos::{self, Photo};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::compose::{self, Dims};
use crate::error::{MosaicError, Result};
use crate::softassign::SoftAssignParams;
use crate::solve::{Method, SolveOptions};

/// The photo the mosaic shows; the tiles are cut from the other photos.
const TARGET_PHOTO: Photo = photos::ASTRONAUT;
pub const GRID: Dims = Dims(36, 36);
const CELLS: Dims = Dims(4, 4);
const TILES: usize = 1400;
const TILE_IMAGE_PX: usize = 48;
const TARGET: (usize, usize) = (504, 504);
const TILE_PX: usize = 20;
/// How far each tile's colours move toward its cell's (`--tint`): enough for the photo to
/// read from a distance, little enough that every tile stays itself.
const TINT: f32 = 0.5;

/// One method's result in the demo.
#[derive(Clone, Debug, serde::Serialize)]
pub struct MethodResult {
    pub method: Method,
    pub cost: f64,
    pub ratio_to_exact: f64,
    pub solve_ms: f64,
    /// The image's file name in the output folder.
    pub image: String,
}

/// What `mosaic demo` did (also written to `summary.json`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct DemoReport {
    pub grid: String,
    pub cells: String,
    pub patches: usize,
    pub tiles: usize,
    /// The GPU used, `None` on the CPU backend (as in the envelope; kept for summary.json).
    pub device: Option<String>,
    pub backend: kit::Backend,
    pub softassign_params: SoftAssignParams,
    pub methods: Vec<MethodResult>,
    pub demo_ms: f64,
    /// The files written, in the output folder.
    #[serde(skip)]
    pub files: Vec<PathBuf>,
}

impl DemoReport {
    fn method(&self, method: Method) -> Option<&MethodResult> {
        self.methods.iter().find(|r| r.method == method)
    }
}

impl std::fmt::Display for DemoReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "mosaic demo: {} patches from {} tiles", self.patches, self.tiles)?;
        if let Some(s) = self.method(Method::Softassign) {
            write!(f, ": softassign cost {:.1} = {:.4} x exact in {:.0} ms", s.cost, s.ratio_to_exact, s.solve_ms)?;
        }
        if let Some(g) = self.method(Method::Greedy) {
            write!(f, " (greedy {:.4} x)", g.ratio_to_exact)?;
        }
        let names: Vec<String> =
            self.files.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
        write!(f, "; wrote {}", names.join(", "))
    }
}

/// Writes `count` tiles into two subfolders of `dir`: square crops of the photos other than
/// the target, each at a random centre and a random scale (a tenth to a half of the photo's
/// shorter side), so that the tiles hold the photos' colours and textures.
fn write_tiles(dir: &Path, count: usize, rng: &mut ChaCha8Rng) -> Result<()> {
    let sources: Vec<Photo> = photos::ALL.into_iter().filter(|p| p.name != TARGET_PHOTO.name).collect();
    for k in 0..count {
        let sub = dir.join(if k % 2 == 0 { "even" } else { "odd" });
        std::fs::create_dir_all(&sub).map_err(|e| MosaicError::file(&sub, e))?;
        let photo = sources[k % sources.len()];
        let centre = [rng.gen::<f64>(), rng.gen::<f64>()];
        let scale = 0.1 + 0.4 * rng.gen::<f64>();
        let crop = photo.crop_resized(centre, scale, TILE_IMAGE_PX, TILE_IMAGE_PX, 3)?;
        let rgb: Vec<u8> = crop.data.iter().map(|&v| kit::image::to_u8(v)).collect();
        kit::image::save_rgb8(&sub.join(format!("tile_{k:04}.png")), TILE_IMAGE_PX, TILE_IMAGE_PX, &rgb)?;
    }
    Ok(())
}

/// The methods the demo runs: SoftAssign only on a GPU, where it takes seconds (on a CPU
/// device, lavapipe or `--backend cpu`, it takes minutes at this size).
fn methods_for(ctx: Option<&Context>) -> Vec<Method> {
    let gpu = ctx.is_some_and(|c| c.info().device_type != "CPU");
    let mut methods = vec![Method::Exact, Method::Greedy];
    if gpu {
        methods.insert(1, Method::Softassign);
    }
    methods
}

/// Runs the demo into the folder `out` (checked by the caller) on `ctx` (the GPU backend)
/// or the CPU (`None`). Every file is written or none.
pub fn run(ctx: Option<&Context>, out: &Path, options: &SolveOptions) -> Result<DemoReport> {
    let start = std::time::Instant::now();
    let tmp = tempfile::tempdir().map_err(|e| MosaicError::file(std::env::temp_dir(), e))?;
    let mut rng = ChaCha8Rng::seed_from_u64(2011);
    let photo = TARGET_PHOTO.resized(TARGET.0, TARGET.1, 3)?;
    let target_rgb: Vec<u8> = photo.data.iter().map(|&v| kit::image::to_u8(v)).collect();
    // The target is made in the temporary folder and copied out with the rest.
    let target = tmp.path().join("target.png");
    kit::image::save_rgb8(&target, TARGET.0, TARGET.1, &target_rgb)?;
    let tiles = tmp.path().join("tiles");
    write_tiles(&tiles, TILES, &mut rng)?;

    // The tiles live only as long as the demo: nothing to cache.
    let spec = compose::ProblemSpec {
        target: &target,
        tiles: &tiles,
        layout: compose::CellLayout::Grid(GRID),
        cells: CELLS,
        metric: Default::default(),
        cache_dir: None,
    };
    let problem = compose::prepare(&spec, |_| {})?;
    let d = problem.distances(options.backend, ctx)?;
    let mut images = vec![("target.png".to_string(), TARGET, target_rgb)];
    let mut methods = Vec::new();
    let mut exact_cost = f64::NAN;
    for method in methods_for(ctx) {
        let look = compose::Look { tile_px: TILE_PX, tint: TINT };
        let built = compose::build(&problem, &d, method, options, &look, ctx)?;
        if method == Method::Exact {
            exact_cost = built.solved.cost;
        }
        let image = format!("mosaic_{}.png", method.name());
        images.push((image.clone(), (built.layout.width(), built.layout.height()), built.rgb));
        methods.push(MethodResult {
            method,
            cost: built.solved.cost,
            ratio_to_exact: built.solved.cost / exact_cost,
            solve_ms: built.solved.solve_ms,
            image,
        });
    }
    let mut report = DemoReport {
        grid: format!("{}x{}", GRID.0, GRID.1),
        cells: format!("{}x{}", CELLS.0, CELLS.1),
        patches: d.rows,
        tiles: d.cols,
        device: ctx.map(|c| c.info().name.clone()),
        backend: options.backend,
        softassign_params: options.softassign.clone(),
        methods,
        demo_ms: start.elapsed().as_secs_f64() * 1e3,
        files: Vec::new(),
    };
    // Images are encoded in memory, then every file is staged and renamed into place together.
    let mut staged = kit::output::Staged::new();
    for (name, (w, h), rgb) in &images {
        let path = out.join(name);
        let scratch = tmp.path().join(name);
        kit::image::save_rgb8(&scratch, *w, *h, rgb)?;
        let bytes = std::fs::read(&scratch).map_err(|e| MosaicError::file(&scratch, e))?;
        staged.write(&path, |w| w.write_all(&bytes))?;
        report.files.push(path);
    }
    let summary = out.join("summary.json");
    let text = serde_json::to_string_pretty(&report).map_err(|e| MosaicError::file(&summary, e))?;
    staged.write(&summary, |w| writeln!(w, "{text}"))?;
    report.files.push(summary);
    staged.commit()?;
    Ok(report)
}
