//! `tessera.mad`, `tessera.mad_batch` and `tessera.create_metric("mad")`: numpy images to the
//! gray images the metric scores, then the mad crate's CPU reference or GPU path (batched
//! as `mad batch` batches, one worker per device claiming groups of pairs).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mad::constants::MIN_SIDE;
use mad::gpu::{GpuMad, KEPT_SLOTS};
use mad::{GrayImage, Maps, Scores};
use numpy::ndarray::ArrayView3;
use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use rayon::prelude::*;

use crate::arrays::{check_unit, image3, AnyArray, AnyView, Layout, Sample, Scale};
use crate::devices::{open_gpus, Backend};
use crate::errors::{run, Error, Result};
use crate::with_view;

/// The gray image MAD scores from an image of 1 to 4 channels (a second or fourth channel is
/// alpha and dropped): the samples as a file of the same type decodes them (8 or 16 bits, or
/// floats), converted by `mad::GrayImage::from_image`, the CLI's own rules.
fn gray<T: Sample>(img: ArrayView3<'_, T>) -> GrayImage {
    let (height, width, channels) = img.dim();
    let (bits, scale) = match T::SCALE {
        Scale::Eight => (8, 255.0),
        Scale::Sixteen => (16, 65535.0),
        Scale::Unit => (32, 1.0),
    };
    let kept = if channels >= 3 { 3 } else { 1 };
    let mut data = vec![0f32; width * height * kept];
    data.par_chunks_mut(width * kept).enumerate().for_each(|(y, row)| {
        for (i, out) in row.iter_mut().enumerate() {
            *out = (img[[y, i / kept, i % kept]].value() / scale) as f32;
        }
    });
    GrayImage::from_image(&kit::image::ImageF32 { width, height, channels: kept, data, source_bits: bits })
}

/// One image of the API, checked: 1 to 4 channels, float samples finite and in [0, 1].
fn checked<'a>(view: &AnyView<'a>, layout: Layout, what: &str) -> Result<(usize, usize)> {
    with_view!(view, v => {
        let img = image3(v.clone(), layout, what)?;
        check_unit(&img, what)?;
        let (h, w, _) = img.dim();
        Ok((w, h))
    })
}

fn to_gray(view: &AnyView<'_>, layout: Layout, what: &str) -> Result<GrayImage> {
    with_view!(view, v => Ok(gray(image3(v.clone(), layout, what)?)))
}

/// Checks that a pair can be scored (same size, at least MIN_SIDE per side), returning its
/// size.
fn check_pair(r: (usize, usize), d: (usize, usize), what: &str) -> Result<(usize, usize)> {
    if r != d {
        return Err(Error::invalid(format!(
            "{what}size mismatch: reference is {}x{}, distorted is {}x{}",
            r.0, r.1, d.0, d.1
        )));
    }
    if r.0 < MIN_SIDE || r.1 < MIN_SIDE {
        return Err(Error::invalid(format!(
            "{what}image is {}x{}; MAD needs at least {MIN_SIDE}x{MIN_SIDE} (its maps are cropped by 17 pixels per side)",
            r.0, r.1
        )));
    }
    Ok(r)
}

/// The gray images of a pair, within the memory budget.
fn gray_pair(r: &AnyView<'_>, d: &AnyView<'_>) -> Result<(GrayImage, GrayImage)> {
    let (w, h) = check_pair(checked(r, Layout::Hwc, "reference")?, checked(d, Layout::Hwc, "distorted")?, "")?;
    kit::budget::check(
        // Both gray images (f64), and one image's samples as the loader holds them (3 f32).
        (w as u64).saturating_mul(h as u64).saturating_mul(28),
        format!("the gray images of a {w}x{h} pair"),
    )?;
    Ok((to_gray(r, Layout::Hwc, "reference")?, to_gray(d, Layout::Hwc, "distorted")?))
}

/// Where the scorer runs: the CPU reference or one MAD pipeline set per device.
enum Where {
    Cpu,
    Gpu(Vec<Arc<Mutex<GpuMad>>>),
}

/// A MAD scorer that keeps its devices and pipelines between calls.
#[pyclass(frozen, module = "tessera._tessera")]
pub struct MadScorer {
    place: Where,
    names: Vec<String>,
}

fn lock(gpu: &Mutex<GpuMad>) -> std::sync::MutexGuard<'_, GpuMad> {
    gpu.lock().unwrap_or_else(|e| e.into_inner())
}

impl MadScorer {
    fn score_gray(&self, r: &GrayImage, d: &GrayImage, maps: bool) -> Result<(Scores, Option<Maps>)> {
        mad::input::check_pair(r, d)?;
        let (w, h) = (r.width as u64, r.height as u64);
        Ok(match &self.place {
            Where::Cpu => {
                mad::cpu::check_budget(w, h)?;
                mad::cpu::score_with(r, d, maps)?
            }
            Where::Gpu(gpus) => {
                let gpu = lock(&gpus[0]);
                gpu.check_pair_budget(w, h, maps)?;
                gpu.score(r, d, maps)?
            }
        })
    }

    /// Scores pairs `0..n` (`pair(i)` gives pair i's gray images) on every device at once,
    /// each claiming the next group of pairs when it is ready; returns the scores in order.
    fn batch_gpu(
        gpus: &[Arc<Mutex<GpuMad>>],
        n: usize,
        size: (usize, usize),
        pair: &(dyn Fn(usize) -> Result<(GrayImage, GrayImage)> + Sync),
    ) -> Result<Vec<f64>> {
        let group = rayon::current_num_threads().max(4) * 2;
        let next = AtomicUsize::new(0);
        let scores = Mutex::new(vec![f64::NAN; n]);
        let failures: Vec<Error> = std::thread::scope(|scope| {
            let workers: Vec<_> = gpus
                .iter()
                .map(|gpu| {
                    let (next, scores) = (&next, &scores);
                    scope.spawn(move || -> Result<()> {
                        let gpu = lock(gpu);
                        let (w, h) = (size.0 as u64, size.1 as u64);
                        gpu.check_budget(w, h, 1, KEPT_SLOTS as u64, false)?;
                        gpu.check_budget(w, h, gpu.default_chunk(size.0, size.1) as u64, KEPT_SLOTS as u64, false)?;
                        let failed = Mutex::new(None);
                        let stream = std::iter::from_fn(|| {
                            let start = next.fetch_add(group, Ordering::Relaxed);
                            (start < n).then(|| start..(start + group).min(n))
                        })
                        .flat_map(|range| range.into_par_iter().map(|i| (i, pair(i))).collect::<Vec<_>>())
                        .map_while(|(i, p)| match p {
                            Ok((r, d)) => Some((i, r, d)),
                            Err(e) => {
                                *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                                None
                            }
                        });
                        gpu.score_stream(stream, None, false, |s| {
                            scores.lock().unwrap_or_else(|e| e.into_inner())[s.tag] = s.scores.mad;
                        })?;
                        match failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
                            Some(e) => Err(e),
                            None => Ok(()),
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .filter_map(|w| match w.join() {
                    Ok(r) => r.err(),
                    Err(_) => Some(Error::new(crate::errors::Kind::Failed, "a batch worker panicked")),
                })
                .collect()
        });
        if let Some(e) = failures.into_iter().next() {
            return Err(e);
        }
        Ok(scores.into_inner().unwrap_or_else(|e| e.into_inner()))
    }
}

/// `(mad, detection, appearance, alpha, maps)`, maps `None` or `(detection, appearance,
/// combined)` as HxW float32 arrays.
fn scores_tuple<'py>(py: Python<'py>, scores: Scores, maps: Option<Maps>) -> PyResult<Bound<'py, PyTuple>> {
    let maps = match maps {
        None => py.None().into_bound(py),
        Some(m) => {
            let shape = [m.height, m.width];
            let arr = |v: Vec<f32>| PyArray1::from_vec(py, v).reshape(shape);
            PyTuple::new(py, [arr(m.detection)?, arr(m.appearance)?, arr(m.combined)?])?.into_any()
        }
    };
    PyTuple::new(
        py,
        [
            scores.mad.into_pyobject(py)?.into_any(),
            scores.detection.into_pyobject(py)?.into_any(),
            scores.appearance.into_pyobject(py)?.into_any(),
            scores.alpha.into_pyobject(py)?.into_any(),
            maps,
        ],
    )
}

#[pymethods]
impl MadScorer {
    /// Opens the devices `device` names (`backend="gpu"`) and builds MAD's pipelines on each.
    #[new]
    #[pyo3(signature = (backend = "gpu", device = None))]
    fn new(py: Python<'_>, backend: &str, device: Option<String>) -> PyResult<MadScorer> {
        let backend = Backend::parse(backend)?;
        run(py, move || {
            Ok(match backend {
                Backend::Cpu => MadScorer { place: Where::Cpu, names: Vec::new() },
                Backend::Gpu => {
                    let contexts = open_gpus(device.as_deref())?;
                    let names = contexts.iter().map(|c| c.info().name.clone()).collect();
                    let gpus = contexts
                        .iter()
                        .map(|c| GpuMad::new(c).map(|g| Arc::new(Mutex::new(g))))
                        .collect::<Result<_, _>>()?;
                    MadScorer { place: Where::Gpu(gpus), names }
                }
            })
        })
    }

    /// The names of the devices this scorer runs on (empty on the CPU backend).
    #[getter]
    fn devices(&self) -> Vec<String> {
        self.names.clone()
    }

    /// Scores one pair of images (numpy arrays).
    #[pyo3(signature = (reference, distorted, maps = false))]
    fn score<'py>(
        &self,
        py: Python<'py>,
        reference: &Bound<'py, PyAny>,
        distorted: &Bound<'py, PyAny>,
        maps: bool,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let r = AnyArray::extract(reference, "reference")?;
        let d = AnyArray::extract(distorted, "distorted")?;
        let (rv, dv) = (r.view(), d.view());
        let (scores, m) = run(py, || {
            let (r, d) = gray_pair(&rv, &dv)?;
            self.score_gray(&r, &d, maps)
        })?;
        scores_tuple(py, scores, m)
    }

    /// Scores one pair of image files, read as the command line reads them.
    #[pyo3(signature = (reference, distorted, maps = false))]
    fn score_files<'py>(
        &self,
        py: Python<'py>,
        reference: PathBuf,
        distorted: PathBuf,
        maps: bool,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let (scores, m) = run(py, || {
            let fits = |w: u64, h: u64| match &self.place {
                Where::Cpu => mad::cpu::check_budget(w, h),
                Where::Gpu(gpus) => lock(&gpus[0]).check_pair_budget(w, h, maps),
            };
            let (r, d) = mad::input::load_pair(&reference, &distorted, fits)?;
            self.score_gray(&r, &d, maps)
        })?;
        scores_tuple(py, scores, m)
    }

    /// Scores pairs `(references[i], distorted[i])` of one size; `layout` is "hwc" for HxW or
    /// HxWxC images and "chw" for CxHxW ones. Returns the MAD scores.
    fn batch<'py>(
        &self,
        py: Python<'py>,
        references: Vec<Bound<'py, PyAny>>,
        distorted: Vec<Bound<'py, PyAny>>,
        layout: &str,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let layout = match layout {
            "hwc" => Layout::Hwc,
            "chw" => Layout::Chw,
            other => return Err(Error::invalid(format!("layout must be 'hwc' or 'chw'; got {other:?}")).into()),
        };
        if references.len() != distorted.len() {
            return Err(Error::invalid(format!(
                "{} references but {} distorted images; give one distorted image per reference",
                references.len(),
                distorted.len()
            ))
            .into());
        }
        let extract = |list: &[Bound<'py, PyAny>], what: &str| -> Result<Vec<AnyArray<'py>>> {
            list.iter().enumerate().map(|(i, o)| AnyArray::extract(o, &format!("{what} {i}"))).collect()
        };
        let refs = extract(&references, "reference")?;
        let dists = extract(&distorted, "distorted image")?;
        let views: Vec<(AnyView<'_>, AnyView<'_>)> =
            refs.iter().zip(&dists).map(|(r, d)| (r.view(), d.view())).collect();
        let scores = run(py, || {
            // Every pair is checked before any work: shapes, sizes, values.
            let sizes = views
                .par_iter()
                .enumerate()
                .map(|(i, (r, d))| {
                    let rs = checked(r, layout, &format!("reference {i}"))?;
                    let ds = checked(d, layout, &format!("distorted image {i}"))?;
                    check_pair(rs, ds, &format!("pair {i}: "))
                })
                .collect::<Result<Vec<_>>>()?;
            let Some(&size) = sizes.first() else { return Ok(Vec::new()) };
            if let Some(i) = sizes.iter().position(|&s| s != size) {
                return Err(Error::invalid(format!(
                    "pair {i} is {}x{} but pair 0 is {}x{}; a batch holds pairs of one size (score others in another batch)",
                    sizes[i].0, sizes[i].1, size.0, size.1
                )));
            }
            let pair = |i: usize| -> Result<(GrayImage, GrayImage)> {
                let (r, d) = &views[i];
                Ok((to_gray(r, layout, "reference")?, to_gray(d, layout, "distorted")?))
            };
            match &self.place {
                Where::Cpu => {
                    mad::cpu::check_budget(size.0 as u64, size.1 as u64)?;
                    (0..views.len())
                        .map(|i| {
                            let (r, d) = pair(i)?;
                            Ok(mad::cpu::score_with(&r, &d, false)?.0.mad)
                        })
                        .collect()
                }
                Where::Gpu(gpus) => Self::batch_gpu(gpus, views.len(), size, &pair),
            }
        })?;
        Ok(PyArray1::from_vec(py, scores))
    }
}
