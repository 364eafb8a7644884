//! `tessera.smoe`: Steered Mixture-of-Experts models fitted to images (HxWx3) or light
//! fields (UxVxHxWx3) from numpy, rendered back to arrays, saved and loaded in the smoe
//! crate's formats. A fit runs the same stages as `smoe fit`: the start, EM (tile-culled
//! for images on the GPU), refinement, and the PSNR of the model as `smoe render` renders it.

use std::path::PathBuf;

use numpy::ndarray::{ArrayViewD, Axis, Ix5};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use smoe::data::Grid;
use smoe::error::SmoeError;
use smoe::fit::{fit_kernels, FitSettings, Init};
use smoe::gpu::em::culled::TILE;
use smoe::gpu::render::{Cull, Mode, RenderSettings, Renderer};
use smoe::memory::{check_device, fit_memory};
use smoe::model::{Model, ModelError, MAX_EXTENT};
use smoe::params::RefineOptions;
use smoe::target::{smallest_kernels, start_kernels};

use crate::arrays::{check_unit, image3, AnyArray, Layout, Sample, Scale};
use crate::devices::{shared_context, Backend};
use crate::errors::{run, Error, Kind, Result};
use crate::with_view;

impl From<ModelError> for Error {
    fn from(e: ModelError) -> Error {
        match e {
            ModelError::Input(e) => e.into(),
            other => Error::invalid(other.to_string()),
        }
    }
}

impl From<SmoeError> for Error {
    fn from(e: SmoeError) -> Error {
        match e {
            SmoeError::Model(e) => e.into(),
            SmoeError::Engine(e) => e.into(),
            e @ SmoeError::DeviceMemory { .. } => Error::new(Kind::Budget, e.to_string()),
            SmoeError::Invalid(message) => Error::invalid(message),
        }
    }
}

fn failed(e: impl std::fmt::Display) -> Error {
    Error::new(Kind::Failed, e.to_string())
}

/// A sample on [0, 1] in f32, as kit's image reader makes it.
fn unit<T: Sample>(v: T) -> f32 {
    match T::SCALE {
        Scale::Eight => v.value() as f32 / 255.0,
        Scale::Sixteen => v.value() as f32 / 65535.0,
        Scale::Unit => v.value() as f32,
    }
}

/// An image (HxW, HxWx3, HxWx4: alpha dropped, gray repeated) or a light field
/// (U x V x H x W x 3) as the samples a model is fitted to.
fn grid_of<T: Sample>(a: ArrayViewD<'_, T>) -> Result<Grid> {
    let grid = if a.ndim() == 5 {
        let lf = a.into_dimensionality::<Ix5>().map_err(|_| Error::invalid("light field: not 5-D"))?;
        let (nu, nv, h, w, c) = lf.dim();
        if c != 3 || nu * nv * h * w == 0 {
            return Err(Error::invalid(format!(
                "a light field has shape (U, V, H, W, 3); this one {}",
                crate::arrays::shape_text(lf.shape())
            )));
        }
        let mut rgb = Vec::with_capacity(nu * nv * h * w * 3);
        for v in 0..nv {
            for u in 0..nu {
                let view = lf.index_axis(Axis(0), u);
                let view = view.index_axis(Axis(0), v);
                check_unit(&view, &format!("light field view ({u}, {v})"))?;
                rgb.extend(view.iter().map(|&s| unit(s)));
            }
        }
        Grid { extent: vec![w, h, nu, nv], rgb }
    } else {
        let img = image3(a, Layout::Hwc, "image")?;
        check_unit(&img, "image")?;
        let (h, w, c) = img.dim();
        let mut rgb = Vec::with_capacity(h * w * 3);
        for y in 0..h {
            for x in 0..w {
                for k in 0..3 {
                    rgb.push(unit(img[[y, x, if c >= 3 { k } else { 0 }]]));
                }
            }
        }
        Grid { extent: vec![w, h], rgb }
    };
    if let Some(&e) = grid.extent.iter().find(|&&e| e as u64 > MAX_EXTENT) {
        return Err(Error::invalid(format!(
            "a side of {e} samples; a model's extent is at most {MAX_EXTENT} per axis"
        )));
    }
    Ok(grid)
}

/// A fitted or loaded model.
#[pyclass(frozen, module = "tessera._tessera")]
pub struct SmoeModel {
    model: Model,
    psnr_db: Option<f64>,
}

/// Fits `k` kernels: the start, EM, refinement; returns the model and its PSNR as rendered.
fn fit_at(ctx: Option<&engine::Context>, grid: &Grid, k: usize, s: &FitSettings) -> Result<(Model, f64)> {
    let fitted = fit_kernels(ctx, grid, k, s, &mut |_| {})?;
    Ok((fitted.model, fitted.psnr_db))
}

/// Fits a model to an image or light field: `kernels` of them, or the smallest count
/// (within 10%, up to `kernels` or a quarter of the samples) whose fit reaches `psnr` dB.
#[pyfunction]
#[pyo3(signature = (data, kernels = None, psnr = None, iterations = 40, init = "kmeans", refine_steps = smoe::params::DEFAULT_REFINE_STEPS, refine_lr = 0.01, backend = "gpu", device = None))]
#[allow(clippy::too_many_arguments)]
pub fn smoe_fit(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    kernels: Option<usize>,
    psnr: Option<f64>,
    iterations: usize,
    init: &str,
    refine_steps: usize,
    refine_lr: f64,
    backend: &str,
    device: Option<String>,
) -> PyResult<SmoeModel> {
    let backend = Backend::parse(backend)?;
    let init = match init {
        "kmeans" => Init::Kmeans,
        "grid" => Init::Grid,
        other => return Err(Error::invalid(format!("init must be \"kmeans\" or \"grid\"; got {other:?}")).into()),
    };
    if kernels.is_none() && psnr.is_none() {
        return Err(Error::invalid("give kernels=K, psnr=DB or both (psnr with kernels as the cap)").into());
    }
    if kernels == Some(0) {
        return Err(Error::invalid("kernels must be at least 1").into());
    }
    if let Some(db) = psnr {
        if !(db.is_finite() && db > 0.0 && db <= 200.0) {
            return Err(Error::invalid(format!("psnr must be a target in dB in (0, 200]; got {db}")).into());
        }
    }
    if !(1..=100_000).contains(&iterations) {
        return Err(Error::invalid(format!("iterations must be between 1 and 100000; got {iterations}")).into());
    }
    if refine_steps > 100_000 || !(refine_lr.is_finite() && refine_lr > 0.0 && refine_lr <= 1.0) {
        return Err(Error::invalid("refine_steps must be 0 to 100000 and refine_lr in (0, 1]").into());
    }
    let settings = FitSettings { iterations, init, refine: RefineOptions { steps: refine_steps, lr: refine_lr } };
    let array = AnyArray::extract(data, "data")?;
    let view = array.view();
    let (model, psnr_db) = run(py, || {
        let grid = with_view!(view.clone(), v => grid_of(v))?;
        let samples = grid.len();
        let largest = match psnr {
            None => kernels.unwrap_or(1),
            Some(_) => kernels.unwrap_or((samples / 4).max(1)),
        };
        if largest > samples {
            return Err(Error::invalid(format!("kernels={largest} is more than the {samples} samples")));
        }
        let memory = fit_memory(&grid.extent, largest, TILE);
        kit::budget::check(memory.host_bytes, format!("fitting {largest} kernels to {samples} samples"))?;
        let ctx = match backend {
            Backend::Gpu => Some(shared_context(device.as_deref())?),
            Backend::Cpu => None,
        };
        if let Some(ctx) = &ctx {
            check_device(ctx, &memory, samples, largest)?;
        }
        match psnr {
            None => fit_at(ctx.as_ref(), &grid, largest, &settings),
            Some(db) => {
                let search = smallest_kernels(start_kernels(samples, largest), largest, db, |k| {
                    let (model, p) = fit_at(ctx.as_ref(), &grid, k, &settings)?;
                    Ok::<_, Error>((p, (model, p)))
                })?;
                match search {
                    Ok(found) => Ok(found.fit),
                    Err(trials) => {
                        let best = trials.iter().map(|t| t.psnr_db).fold(f64::NEG_INFINITY, f64::max);
                        Err(Error::new(
                            Kind::Failed,
                            format!("psnr={db}: not reached with up to {largest} kernels (best {best:.2} dB); raise kernels or lower the target"),
                        ))
                    }
                }
            }
        }
    })?;
    Ok(SmoeModel { model, psnr_db: Some(psnr_db) })
}

/// Loads a model file (`.json`, `.smoe`, `.bin` or `.smc`), checked as `smoe render` checks it.
#[pyfunction]
pub fn smoe_load(py: Python<'_>, path: PathBuf) -> PyResult<SmoeModel> {
    let model = run(py, || Ok(Model::load(&path)?))?;
    Ok(SmoeModel { model, psnr_db: None })
}

#[pymethods]
impl SmoeModel {
    /// Number of kernels.
    #[getter]
    fn kernels(&self) -> usize {
        self.model.len()
    }

    /// 2 for images (x, y), 4 for light fields (x, y, u, v).
    #[getter]
    fn coord_dims(&self) -> usize {
        self.model.coord_dims
    }

    /// Pixels per axis: [W, H] or [W, H, U, V].
    #[getter]
    fn extent(&self) -> Vec<usize> {
        self.model.extent.clone()
    }

    /// The PSNR of the fit as rendered (dB), `None` for a loaded model.
    #[getter]
    fn psnr_db(&self) -> Option<f64> {
        self.psnr_db
    }

    /// Priors, one per kernel (K).
    #[getter]
    fn priors<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, self.model.pi.clone())
    }

    /// Means, K x D (coordinates first, normalised to [0, 1], then colour).
    #[getter]
    fn means<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray2<f64>>> {
        let d = self.model.dims();
        PyArray1::from_vec(py, self.model.mu.clone()).reshape([self.model.len(), d])
    }

    /// Covariances, K x D x D (symmetric).
    #[getter]
    fn covariances<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray3<f64>>> {
        let (k, d) = (self.model.len(), self.model.dims());
        let mut full = vec![0.0; k * d * d];
        for i in 0..k {
            let packed = self.model.covariance(i);
            for a in 0..d {
                for b in 0..d {
                    full[(i * d + a) * d + b] = packed[smoe::model::packed_index(a.max(b), a.min(b))];
                }
            }
        }
        PyArray1::from_vec(py, full).reshape([k, d, d])
    }

    /// Renders the model (HxWx3 float32): at `size` (W, H), default its extent; for light
    /// fields at `view` (u, v) in view indices, default the centre view.
    #[pyo3(signature = (size = None, view = None, backend = "gpu", device = None))]
    fn render<'py>(
        &self,
        py: Python<'py>,
        size: Option<(u32, u32)>,
        view: Option<(f64, f64)>,
        backend: &str,
        device: Option<String>,
    ) -> PyResult<Bound<'py, numpy::PyArray3<f32>>> {
        let backend = Backend::parse(backend)?;
        let model = &self.model;
        let (w, h) = size.unwrap_or((model.extent[0] as u32, model.extent[1] as u32));
        if !(1..=MAX_EXTENT as u32).contains(&w) || !(1..=MAX_EXTENT as u32).contains(&h) {
            return Err(Error::invalid(format!("size: each side must be 1 to {MAX_EXTENT}; got {w}x{h}")).into());
        }
        let position = if model.coord_dims == 2 {
            if view.is_some() {
                return Err(Error::invalid("view applies to light-field models; this model is an image").into());
            }
            [0.0; 2]
        } else {
            let (last_u, last_v) = (model.extent[2] as f64 - 1.0, model.extent[3] as f64 - 1.0);
            let (u, v) = view.unwrap_or((last_u / 2.0, last_v / 2.0));
            if !(0.0..=last_u).contains(&u) || !(0.0..=last_v).contains(&v) {
                return Err(Error::invalid(format!(
                    "view ({u}, {v}) is outside the captured views (0 to {last_u}, 0 to {last_v})"
                ))
                .into());
            }
            [u, v]
        };
        let rgb = run(py, || {
            let uv = smoe::cpu::render::view_coords(model, position);
            kit::budget::elements(&[h as u64, w as u64, 3], 13, "the rendered image")?;
            let rgb: Vec<f32> = match backend {
                Backend::Cpu => {
                    smoe::cpu::render::render(model, w as usize, h as usize, uv).iter().map(|&v| v as f32).collect()
                }
                Backend::Gpu => {
                    let ctx = shared_context(device.as_deref())?;
                    let tile = kit::tuning::param(ctx.info(), "smoe.render", "block")
                        .unwrap_or(RenderSettings::new(w, h).tile);
                    let mut renderer = Renderer::new(&ctx, model, Mode::Robust)?;
                    let settings = RenderSettings {
                        uv: [uv[0] as f32, uv[1] as f32],
                        cull: Cull::Exact,
                        tile,
                        ..RenderSettings::new(w, h)
                    };
                    renderer.render_rgb(settings)?.0
                }
            };
            if let Some(i) = rgb.iter().position(|v| !v.is_finite()) {
                return Err(failed(format!(
                    "the model renders a non-finite value at pixel ({}, {})",
                    (i / 3) % w as usize,
                    i / 3 / w as usize
                )));
            }
            Ok(rgb)
        })?;
        PyArray1::from_vec(py, rgb).reshape([h as usize, w as usize, 3])
    }

    /// Saves the model: JSON for `.json`, the binary format for `.smoe` and `.bin`, `.smc` compact
    /// (written to a temporary file and renamed into place).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        run(py, || {
            kit::output::check_file(&path, smoe::model::MODEL_EXTENSIONS, &[])
                .map_err(|e| Error::invalid(e.to_string()))?;
            Ok(self.model.save(&path)?)
        })
    }

    fn __repr__(&self) -> String {
        let kind = if self.model.coord_dims == 2 { "image" } else { "light field" };
        format!("smoe.Model({} kernels, {kind} {:?})", self.model.len(), self.model.extent)
    }
}
