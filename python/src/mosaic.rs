//! `tessera.mosaic`: assignments of patches to tiles from a distance matrix (`solve`), and
//! whole photomosaics from a target and a tile library (`build`), through the mosaic crate's
//! one entry point for every method.

use std::path::{Path, PathBuf};

use kit::Backend as KitBackend;
use mosaic::colour::Metric;
use mosaic::compose::{CellLayout, Dims, Look, ProblemSpec};
use mosaic::solve::{Method, SolveOptions, Solved};
use mosaic::{DistanceMatrix, MosaicError};
use numpy::ndarray::ArrayView3;
use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrays::{check_unit, image3, AnyArray, AnyView, Layout, Sample};
use crate::devices::{shared_context, Backend};
use crate::errors::{run, Error, Kind, Result};
use crate::with_view;

impl From<MosaicError> for Error {
    fn from(e: MosaicError) -> Error {
        match e {
            MosaicError::Kit(e) => e.into(),
            MosaicError::Engine(e) => e.into(),
            other => Error::new(Kind::Invalid, other.to_string()),
        }
    }
}

fn method(name: &str) -> Result<Method> {
    match name {
        "greedy" => Ok(Method::Greedy),
        "anneal" => Ok(Method::Anneal),
        "softassign" => Ok(Method::Softassign),
        "exact" => Ok(Method::Exact),
        other => Err(Error::invalid(format!(
            "method must be \"exact\", \"softassign\", \"greedy\" or \"anneal\"; got {other:?}"
        ))),
    }
}

/// The options of a solve, and the device it runs on where its method has a GPU path.
fn options(backend: &str, repeat: usize, seed: u64) -> Result<SolveOptions> {
    if repeat == 0 {
        return Err(Error::invalid("repeat must be at least 1"));
    }
    let backend = match Backend::parse(backend)? {
        Backend::Gpu => KitBackend::Gpu,
        Backend::Cpu => KitBackend::Cpu,
    };
    let mut options = SolveOptions { backend, repeat, ..SolveOptions::default() };
    options.anneal.seed = seed;
    Ok(options)
}

fn context_for(method: Method, options: &SolveOptions, device: Option<&str>) -> Result<Option<engine::Context>> {
    match method.backend(options.backend, options.repeat) {
        KitBackend::Gpu => Ok(Some(shared_context(device)?)),
        KitBackend::Cpu => Ok(None),
    }
}

/// The solved assignment as a dict: `assignment` (int64 per patch), `cost`, `method`,
/// `backend` (where it ran), `duality_gap` (exact only) and `solve_ms`.
fn solved_dict<'py>(py: Python<'py>, solved: &Solved, ran_on: KitBackend) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let assignment: Vec<i64> = solved.assignment.iter().map(|&j| j as i64).collect();
    d.set_item("assignment", PyArray1::from_vec(py, assignment))?;
    d.set_item("cost", solved.cost)?;
    d.set_item("method", solved.method.name())?;
    d.set_item("backend", ran_on.name())?;
    d.set_item("duality_gap", solved.duality_gap)?;
    d.set_item("solve_ms", solved.solve_ms)?;
    Ok(d)
}

/// Solves the assignment of an m x n distance matrix (float32 or float64, any strides).
#[pyfunction]
#[pyo3(signature = (distance, method = "exact", repeat = 1, seed = 0, backend = "gpu", device = None))]
pub fn mosaic_solve<'py>(
    py: Python<'py>,
    distance: &Bound<'py, PyAny>,
    method: &str,
    repeat: usize,
    seed: u64,
    backend: &str,
    device: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let array = AnyArray::extract(distance, "distance")?;
    let method = self::method(method)?;
    let options = options(backend, repeat, seed)?;
    let view = array.view();
    let (solved, ran_on) = run(py, || {
        let shape = view.shape().to_vec();
        let [rows, cols] = shape[..] else {
            return Err(Error::invalid(format!(
                "distance: expected a 2-D matrix (patches x tiles); got shape {}",
                crate::arrays::shape_text(&shape)
            )));
        };
        let data: Vec<f64> = match &view {
            AnyView::F32(v) => v.iter().map(|&x| x as f64).collect(),
            AnyView::F64(v) => v.iter().copied().collect(),
            _ => return Err(Error::invalid("distance: expected float32 or float64 distances")),
        };
        kit::budget::check((data.len() as u64).saturating_mul(12), format!("the {rows} x {cols} distance matrix"))?;
        let d = DistanceMatrix::new(rows, cols, data).map_err(|e| Error::from(e).context("distance"))?;
        d.check_capacity(options.repeat)?;
        let ctx = context_for(method, &options, device.as_deref())?;
        let solved = mosaic::solve::run(method, &d, &options, ctx.as_ref())?;
        Ok((solved, method.backend(options.backend, options.repeat)))
    })?;
    solved_dict(py, &solved, ran_on)
}

/// An image as 8-bit RGB bytes (gray repeated, alpha dropped, 16-bit and float rounded).
fn rgb8<T: Sample>(img: ArrayView3<'_, T>) -> Vec<u8> {
    let (h, w, c) = img.dim();
    let mut out = Vec::with_capacity(h * w * 3);
    for y in 0..h {
        for x in 0..w {
            for k in 0..3 {
                let ch = if c >= 3 { k } else { 0 };
                out.push(img[[y, x, ch]].to_u8());
            }
        }
    }
    out
}

/// Writes an image array to `path` as an 8-bit RGB PNG.
fn write_png(view: &AnyView<'_>, path: &Path, what: &str) -> Result<()> {
    with_view!(view, v => {
        let img = image3(v.clone(), Layout::Hwc, what)?;
        check_unit(&img, what)?;
        let (h, w, _) = img.dim();
        kit::image::save_rgb8(path, w, h, &rgb8(img))?;
        Ok(())
    })
}

/// A target given as a file or an array.
pub enum Source<'py> {
    Path(PathBuf),
    Array(AnyArray<'py>),
}

impl<'py> Source<'py> {
    fn extract(obj: &Bound<'py, PyAny>, what: &str) -> Result<Source<'py>> {
        match obj.extract::<PathBuf>() {
            Ok(p) => Ok(Source::Path(p)),
            Err(_) => Ok(Source::Array(AnyArray::extract(obj, what)?)),
        }
    }
}

/// Builds a photomosaic: `target` (an image array or file), `tiles` (a folder, or a list
/// of image arrays), a `grid` of `cols x rows` patches, cells compared by `metric` (lab,
/// ciede2000 or rgb, as `--metric`). Returns the image (HxWx3 uint8) and the solve.
#[pyfunction]
#[pyo3(signature = (target, tiles, grid, method = "exact", repeat = 1, cells = (4, 4), tile_px = 32, tint = 0.0, seed = 0, backend = "gpu", device = None, metric = "lab"))]
#[allow(clippy::too_many_arguments)]
pub fn mosaic_build<'py>(
    py: Python<'py>,
    target: &Bound<'py, PyAny>,
    tiles: &Bound<'py, PyAny>,
    grid: (usize, usize),
    method: &str,
    repeat: usize,
    cells: (usize, usize),
    tile_px: usize,
    tint: f64,
    seed: u64,
    backend: &str,
    device: Option<String>,
    metric: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let method = self::method(method)?;
    let metric = match metric {
        "lab" => Metric::Lab,
        "ciede2000" => Metric::Ciede2000,
        "rgb" => Metric::Rgb,
        other => return Err(Error::invalid(format!("metric must be lab, ciede2000 or rgb; got {other:?}")).into()),
    };
    let options = options(backend, repeat, seed)?;
    let dims = |(a, b): (usize, usize), what: &str| -> Result<Dims> {
        format!("{a}x{b}").parse::<Dims>().map_err(|e| Error::invalid(format!("{what}: {e}")))
    };
    let (grid, cells) = (dims(grid, "grid")?, dims(cells, "cells")?);
    if !(1..=4096).contains(&tile_px) {
        return Err(Error::invalid(format!("tile_px must be between 1 and 4096; got {tile_px}")).into());
    }
    if !(0.0..=1.0).contains(&tint) {
        return Err(Error::invalid(format!("tint must be in [0, 1]; got {tint}")).into());
    }
    let target = Source::extract(target, "target")?;
    let tile_folder: Option<PathBuf> = tiles.extract::<PathBuf>().ok();
    let tile_arrays: Vec<AnyArray<'py>> = match &tile_folder {
        Some(_) => Vec::new(),
        None => {
            let list: Vec<Bound<'py, PyAny>> =
                tiles.extract().map_err(|_| Error::invalid("tiles: expected a folder or a list of image arrays"))?;
            list.iter().enumerate().map(|(i, t)| AnyArray::extract(t, &format!("tile {i}"))).collect::<Result<_>>()?
        }
    };
    let target_view = match &target {
        Source::Array(a) => Some(a.view()),
        Source::Path(_) => None,
    };
    let tile_views: Vec<AnyView<'_>> = tile_arrays.iter().map(|a| a.view()).collect();
    let target_path = match &target {
        Source::Path(p) => Some(p.clone()),
        Source::Array(_) => None,
    };
    let (built, ran_on) = run(py, || {
        // Arrays go through files in a temporary folder: the mosaic crate indexes tiles
        // from a folder (thumbnails and features) and reads the target as the CLI does.
        let scratch = tempfile::tempdir().map_err(|e| Error::new(Kind::Failed, format!("a temporary folder: {e}")))?;
        let target_path = match (&target_path, &target_view) {
            (Some(p), _) => p.clone(),
            (None, Some(v)) => {
                let p = scratch.path().join("target.png");
                write_png(v, &p, "target")?;
                p
            }
            (None, None) => unreachable!("a target is a path or an array"),
        };
        let tiles_dir = match &tile_folder {
            Some(dir) => dir.clone(),
            None => {
                if tile_views.is_empty() {
                    return Err(Error::invalid("tiles: the list is empty"));
                }
                let dir = scratch.path().join("tiles");
                std::fs::create_dir(&dir).map_err(|e| Error::new(Kind::Failed, format!("a temporary folder: {e}")))?;
                for (i, v) in tile_views.iter().enumerate() {
                    write_png(v, &dir.join(format!("{i:06}.png")), &format!("tile {i}"))?;
                }
                dir
            }
        };
        let spec = ProblemSpec {
            target: &target_path,
            tiles: &tiles_dir,
            layout: CellLayout::Grid(grid),
            cells,
            metric,
            cache_dir: None,
        };
        let problem = mosaic::compose::prepare(&spec, |_| {})?;
        problem.check_capacity(options.repeat)?;
        problem.checked_layout(tile_px)?;
        let ctx = match options.backend {
            KitBackend::Gpu => Some(shared_context(device.as_deref())?),
            KitBackend::Cpu => None,
        };
        let d = problem.distances(options.backend, ctx.as_ref())?;
        let look = Look { tile_px, tint: tint as f32 };
        let built = mosaic::compose::build(&problem, &d, method, &options, &look, ctx.as_ref())?;
        Ok((built, method.backend(options.backend, options.repeat)))
    })?;
    let d = solved_dict(py, &built.solved, ran_on)?;
    let (w, h) = (built.layout.width(), built.layout.height());
    d.set_item("image", PyArray1::from_vec(py, built.rgb).reshape([h, w, 3])?)?;
    d.set_item("render_ms", built.render_ms)?;
    Ok(d)
}
