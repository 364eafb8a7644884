//! `tessera.lightfield`: the dictionary-ensemble light-field codec on 5-D arrays (U x V x
//! H x W x 3): `train` an ensemble, `encode` to `.lfc` bytes, `decode` them, and `render`
//! a viewpoint (interpolated, refocused), as the `lightfield` subcommands of the same names.

use std::path::PathBuf;

use lightfield::bitstream::Compressed;
use lightfield::codec::{decode_lightfield, encode_to_bytes, CodecPath};
use lightfield::codes::Params;
use lightfield::cpu::render::render_cpu_with;
use lightfield::dictionary::Ensemble;
use lightfield::gpu::render::GpuRenderer;
use lightfield::gpu::GpuCodec;
use lightfield::lightfield::LightField;
use lightfield::patch::PatchShape;
use lightfield::render::{unpack_rgb8, PixelOrder, View};
use lightfield::train::{TrainDevice, TrainOptions};
use lightfield::LfError;
use numpy::ndarray::{ArrayViewD, Ix5};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::arrays::{AnyArray, Sample, Scale};
use crate::devices::{shared_context, Backend};
use crate::errors::{run, Error, Kind, Result};
use crate::with_view;

impl From<LfError> for Error {
    fn from(e: LfError) -> Error {
        match e {
            LfError::Kit(e) => e.into(),
            LfError::Engine(e) => e.into(),
            other => Error::new(Kind::Invalid, other.to_string()),
        }
    }
}

/// A 5-D array as a light field (samples scaled to [0, 1], checked finite and in range).
fn light_field<T: Sample>(a: ArrayViewD<'_, T>, what: &str) -> Result<LightField> {
    let shape = a.shape().to_vec();
    let lf = a.into_dimensionality::<Ix5>().ok().filter(|lf| lf.dim().4 == 3).ok_or_else(|| {
        Error::invalid(format!(
            "{what}: a light field has shape (U, V, H, W, 3); got {}",
            crate::arrays::shape_text(&shape)
        ))
    })?;
    let (u, v, h, w, _) = lf.dim();
    kit::budget::elements(&[u as u64, v as u64, h as u64, w as u64, 3], 4, what)?;
    let scale = match T::SCALE {
        Scale::Eight => 1.0 / 255.0,
        Scale::Sixteen => 1.0 / 65535.0,
        Scale::Unit => 1.0,
    };
    let data: Vec<f32> = lf.iter().map(|&s| (s.value() * scale) as f32).collect();
    let lf = LightField::new(u, v, h, w, data).map_err(|e| Error::from(e).context(what))?;
    lf.check_values(what)?;
    Ok(lf)
}

fn extract_lf(obj: &Bound<'_, PyAny>, what: &str) -> Result<LightField> {
    let array = AnyArray::extract(obj, what)?;
    let view = array.view();
    with_view!(view, v => light_field(v, what))
}

fn gpu_codec(ctx: &engine::Context, ens: &Ensemble, kernel: &str) -> Result<GpuCodec> {
    Ok(match kit::tuning::param(ctx.info(), kernel, "workgroup") {
        Some(workgroup) => GpuCodec::with_workgroup(ctx, ens, workgroup)?,
        None => GpuCodec::new(ctx, ens)?,
    })
}

fn context(backend: Backend, device: Option<&str>) -> Result<Option<engine::Context>> {
    match backend {
        Backend::Gpu => Ok(Some(shared_context(device)?)),
        Backend::Cpu => Ok(None),
    }
}

/// A dictionary ensemble: K dictionaries, one orthonormal matrix per patch mode each.
#[pyclass(frozen, module = "tessera._tessera")]
pub struct LfEnsemble {
    ensemble: Ensemble,
}

#[pymethods]
impl LfEnsemble {
    /// Number of dictionaries K.
    #[getter]
    fn dictionaries(&self) -> usize {
        self.ensemble.k
    }

    /// The patch shape, HxWxUxV.
    #[getter]
    fn patch(&self) -> String {
        self.ensemble.shape.to_string()
    }

    /// Writes the ensemble as a `.lfd` file.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        run(py, || {
            kit::output::check_file(&path, &["lfd"], &[]).map_err(|e| Error::invalid(e.to_string()))?;
            Ok(self.ensemble.write(&path)?)
        })
    }

    fn __repr__(&self) -> String {
        format!("lightfield.Ensemble({} dictionaries, patch {})", self.ensemble.k, self.ensemble.shape)
    }
}

/// Trains an ensemble on light fields, as `lightfield train` does.
#[pyfunction]
#[pyo3(signature = (light_fields, dictionaries, patch = "5x5x8x8", iterations = 5, epsilon = 5e-3, sparsity = None, seed = 1, max_patches = 50_000, precluster = false, backend = "gpu", device = None))]
#[allow(clippy::too_many_arguments)]
pub fn lightfield_train(
    py: Python<'_>,
    light_fields: Vec<Bound<'_, PyAny>>,
    dictionaries: usize,
    patch: &str,
    iterations: usize,
    epsilon: f32,
    sparsity: Option<usize>,
    seed: u64,
    max_patches: usize,
    precluster: bool,
    backend: &str,
    device: Option<String>,
) -> PyResult<LfEnsemble> {
    let backend = Backend::parse(backend)?;
    let shape = PatchShape::parse(patch).map_err(|e| Error::from(e).context("patch"))?;
    if max_patches == 0 || iterations > 1000 {
        return Err(Error::invalid("max_patches must be at least 1 and iterations at most 1000").into());
    }
    let params = Params { sparsity: sparsity.unwrap_or((shape.len() / 8).max(1)), epsilon };
    let lfs: Vec<LightField> = light_fields
        .iter()
        .enumerate()
        .map(|(i, a)| extract_lf(a, &format!("light_fields[{i}]")))
        .collect::<Result<_>>()?;
    let opts = TrainOptions { k: dictionaries, shape, iterations, params, seed, max_patches, precluster };
    let ensemble = run(py, || {
        opts.params.check(opts.shape.len())?;
        let ctx = context(backend, device.as_deref())?;
        let device = ctx.as_ref().map_or(TrainDevice::Cpu, TrainDevice::Gpu);
        Ok(lightfield::train::train(&lfs, &opts, device, |_| {})?.0)
    })?;
    Ok(LfEnsemble { ensemble })
}

/// Reads a `.lfd` ensemble file.
#[pyfunction]
pub fn lightfield_load_ensemble(py: Python<'_>, path: PathBuf) -> PyResult<LfEnsemble> {
    let ensemble = run(py, || Ok(Ensemble::read(&path)?))?;
    Ok(LfEnsemble { ensemble })
}

/// Encodes a light field with an ensemble; returns the `.lfc` file's bytes.
#[pyfunction]
#[pyo3(signature = (light_field, ensemble, sparsity, epsilon = 5e-3, backend = "gpu", device = None))]
pub fn lightfield_encode<'py>(
    py: Python<'py>,
    light_field: &Bound<'py, PyAny>,
    ensemble: &LfEnsemble,
    sparsity: usize,
    epsilon: f32,
    backend: &str,
    device: Option<String>,
) -> PyResult<Bound<'py, PyBytes>> {
    let backend = Backend::parse(backend)?;
    let lf = extract_lf(light_field, "light_field")?;
    let params = Params { sparsity, epsilon };
    let ens = &ensemble.ensemble;
    let bytes = run(py, || {
        params.check(ens.shape.len())?;
        let ctx = context(backend, device.as_deref())?;
        let codec = ctx.as_ref().map(|c| gpu_codec(c, ens, "lightfield.encode")).transpose()?;
        let path = codec.as_ref().map_or(CodecPath::Cpu, CodecPath::Gpu);
        Ok(encode_to_bytes(&lf, ens, params, path, |_| {})?.1)
    })?;
    Ok(PyBytes::new(py, &bytes))
}

/// The light field (U x V x H x W x 3 float32) of `.lfc` bytes, checked as a reader checks
/// them.
#[pyfunction]
#[pyo3(signature = (data, backend = "gpu", device = None))]
pub fn lightfield_decode<'py>(
    py: Python<'py>,
    data: &[u8],
    backend: &str,
    device: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let backend = Backend::parse(backend)?;
    let lf = run(py, || {
        kit::budget::check(data.len() as u64, "the .lfc bytes")?;
        let compressed = Compressed::from_bytes(data).map_err(|e| Error::from(e).context("data"))?;
        let ctx = context(backend, device.as_deref())?;
        let codec = ctx.as_ref().map(|c| gpu_codec(c, &compressed.ensemble, "lightfield.decode")).transpose()?;
        let path = codec.as_ref().map_or(CodecPath::Cpu, CodecPath::Gpu);
        Ok(decode_lightfield(&compressed, path)?.0)
    })?;
    let shape = lf.shape();
    Ok(PyArray1::from_slice(py, &lf.data).reshape(shape)?.into_any())
}

/// Renders a viewpoint of a light field (HxWx3 uint8): `view` (u, v) in view indices
/// (default the centre), refocused at disparity `focus`, blended over `aperture` views.
#[pyfunction]
#[pyo3(signature = (light_field, view = None, focus = 0.0, aperture = 1.0, size = None, backend = "gpu", device = None))]
#[allow(clippy::too_many_arguments)]
pub fn lightfield_render<'py>(
    py: Python<'py>,
    light_field: &Bound<'py, PyAny>,
    view: Option<(f32, f32)>,
    focus: f32,
    aperture: f32,
    size: Option<(u32, u32)>,
    backend: &str,
    device: Option<String>,
) -> PyResult<Bound<'py, PyAny>> {
    let backend = Backend::parse(backend)?;
    let lf = extract_lf(light_field, "light_field")?;
    let lf_size = [lf.u, lf.v, lf.h, lf.w];
    let centre = View::centre(lf_size);
    let (width, height) = size.unwrap_or((lf.w as u32, lf.h as u32));
    let position = view.map_or(centre.position, |(u, v)| [u, v]);
    let viewpoint = View { position, focus, aperture, width, height };
    let rgb = run(py, || {
        viewpoint.check(lf_size)?;
        kit::budget::elements(&[height as u64, width as u64], 4 + 3, "the rendered image")?;
        let pixels = match context(backend, device.as_deref())? {
            Some(ctx) => GpuRenderer::new(&ctx, &lf)?.render(&viewpoint, PixelOrder::Rgba)?,
            None => render_cpu_with(&lf, &viewpoint, PixelOrder::Rgba, &|| {})?,
        };
        Ok(unpack_rgb8(&pixels, PixelOrder::Rgba))
    })?;
    Ok(PyArray1::from_vec(py, rgb).reshape([height as usize, width as usize, 3])?.into_any())
}
