//! `tessera.composite.Compositor`: the compositing library on a caller's MPI communicator
//! (an mpi4py `Comm`, reached through its Fortran handle, `Comm.py2f()`), as the C ABI
//! offers it. Every call is collective: a rank whose arguments are bad refuses the call on
//! every rank ([`Compositor::refuse`]), so no rank is left waiting for it.

use std::borrow::Cow;

use composite::comm::Mpi;
use composite::compositor::{
    Backend, Color, ColorFormat, ColorMut, Compositor, DepthFormat, Settings, Times, Viewport,
};
use composite::schedule::Strategy;
use composite::types::Op;
use composite::CompositeError;
use numpy::ndarray::ArrayViewD;
use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::arrays::{shape_text, AnyArray, AnyView};
use crate::devices::selector;
use crate::errors::{run, Error, Result};

/// The compositor, used only on the thread that made it (its MPI duplicate and device stay
/// there); [`Here`] carries it into and out of the work the GIL is released around, which
/// runs on that same thread.
#[pyclass(unsendable, name = "Compositor")]
pub struct PyCompositor {
    inner: Compositor,
    last: Times,
}

/// A compositor (or a borrow of one) crossing into or out of `Python::detach`, which runs
/// the work on the calling thread: it never reaches another thread.
struct Here<T>(T);

// SAFETY: see `Here`: detach runs its closure on the thread that holds the compositor.
unsafe impl<T> Send for Here<T> {}

/// The settings the constructor's arguments name (the image's width and height, and the
/// formats, mode and backend as Python spells them), or what is wrong with them.
fn parse_settings(
    size: (i64, i64),
    color: &str,
    depth: bool,
    mode: &str,
    backend: &str,
) -> std::result::Result<Settings, String> {
    let side =
        |v: i64, what: &str| u32::try_from(v).ok().filter(|&v| v > 0).ok_or(format!("{what} {v} must be positive"));
    let size = (side(size.0, "width")?, side(size.1, "height")?);
    let color = match color {
        "rgba8" => ColorFormat::Rgba8,
        "rgba32f" => ColorFormat::Rgba32F,
        other => return Err(format!("color must be \"rgba8\" or \"rgba32f\"; got {other:?}")),
    };
    let op = match mode {
        "zbuffer" => Op::ZBuffer,
        "over" => Op::Over,
        other => return Err(format!("mode must be \"zbuffer\" or \"over\"; got {other:?}")),
    };
    let backend = match backend {
        "auto" => Backend::Auto,
        "gpu" => Backend::Gpu,
        "cpu" => Backend::Cpu,
        other => return Err(format!("backend must be \"auto\", \"gpu\" or \"cpu\"; got {other:?}")),
    };
    let depth = if depth { DepthFormat::F32 } else { DepthFormat::None };
    Ok(Settings { size, color, depth, op, backend })
}

fn strategy(text: &str) -> Result<Option<Strategy>> {
    match text {
        "auto" => Ok(None),
        "binary-swap" => Ok(Some(Strategy::BinarySwap)),
        "radix-k" => Ok(Some(Strategy::RadixK)),
        "direct-send" => Ok(Some(Strategy::DirectSend)),
        other => Err(Error::invalid(format!(
            "strategy must be \"auto\", \"binary-swap\", \"radix-k\" or \"direct-send\"; got {other:?}"
        ))),
    }
}

/// The mpi4py communicator's Fortran handle: `comm.py2f()` (any object with that method).
fn handle(comm: &Bound<'_, PyAny>) -> Result<i32> {
    comm.call_method0("py2f")
        .and_then(|h| h.extract())
        .map_err(|_| Error::invalid("comm: expected an mpi4py communicator (an object with py2f())"))
}

/// A buffer's samples as the compositor reads them, or the reason they cannot be.
enum Samples<'a> {
    Bytes(ArrayViewD<'a, u8>),
    Floats(Cow<'a, [f32]>),
}

/// Checks one rank's colour and depth against the compositor's settings.
/// A float array's samples in row-major order: borrowed where a float32 array lies so in
/// memory (a 4K frame's colour is 133 MB), else converted.
fn floats<'a>(v: &AnyView<'a>) -> Option<Cow<'a, [f32]>> {
    match v {
        AnyView::F32(v) => Some(v.to_slice().map_or_else(|| Cow::Owned(v.iter().copied().collect()), Cow::Borrowed)),
        AnyView::F64(v) => Some(Cow::Owned(v.iter().map(|&x| x as f32).collect())),
        _ => None,
    }
}

fn check_inputs<'a>(
    c: &Compositor,
    color: &AnyView<'a>,
    depth: Option<&AnyView<'a>>,
) -> Result<(Samples<'a>, Option<Cow<'a, [f32]>>)> {
    let (w, h) = c.image_size();
    let (w, h) = (w as usize, h as usize);
    let shape = color.shape();
    if shape != [h, w, 4] {
        return Err(Error::invalid(format!(
            "color: shape {} but the compositor's image is {w}x{h}; expected ({h}, {w}, 4)",
            shape_text(shape)
        )));
    }
    let samples = match (c.color_format(), color) {
        (ColorFormat::Rgba8, AnyView::U8(v)) => Samples::Bytes(v.clone()),
        (ColorFormat::Rgba8, _) => return Err(Error::invalid("color: the compositor's colour is rgba8; give uint8")),
        (ColorFormat::Rgba32F, v) => Samples::Floats(
            floats(v)
                .ok_or_else(|| Error::invalid("color: the compositor's colour is rgba32f; give float32 or float64"))?,
        ),
    };
    let depth = match (c.depth_format(), depth) {
        (DepthFormat::None, None) => None,
        (DepthFormat::None, Some(_)) => {
            return Err(Error::invalid("depth: the compositor was made with depth=False; give no depth"))
        }
        (DepthFormat::F32, None) => return Err(Error::invalid("depth: the compositor needs a depth image")),
        (DepthFormat::F32, Some(d)) => {
            if d.shape() != [h, w] {
                return Err(Error::invalid(format!(
                    "depth: shape {} but the compositor's image is {w}x{h}; expected ({h}, {w})",
                    shape_text(d.shape())
                )));
            }
            Some(floats(d).ok_or_else(|| Error::invalid("depth: give float32 or float64"))?)
        }
    };
    Ok((samples, depth))
}

fn viewport(v: Option<(i64, i64, i64, i64)>) -> Result<Option<Viewport>> {
    let Some((x, y, w, h)) = v else { return Ok(None) };
    let u = |v: i64| {
        u32::try_from(v).map_err(|_| Error::invalid(format!("viewport {:?}: a value is negative", (x, y, w, h))))
    };
    Ok(Some(Viewport { x: u(x)?, y: u(y)?, w: u(w)?, h: u(h)? }))
}

/// The phases as `tc_last_time_ms` names them.
fn phases(t: &Times) -> [(&'static str, f64); 5] {
    [
        ("total", t.total_ms),
        ("encode", t.encode_ms),
        ("exchange", t.exchange_ms),
        ("composite", t.composite_ms),
        ("gather", t.gather_ms),
    ]
}

/// The composited image on the root, in the compositor's formats.
enum Out {
    Bytes(Vec<u8>),
    Floats(Vec<f32>),
}

#[pymethods]
impl PyCompositor {
    /// Collective over `comm`'s ranks; see `tessera.composite.Compositor`.
    #[new]
    #[pyo3(signature = (comm, width, height, color = "rgba8", depth = true, mode = "zbuffer", backend = "auto", device = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        comm: &Bound<'_, PyAny>,
        width: i64,
        height: i64,
        color: &str,
        depth: bool,
        mode: &str,
        backend: &str,
        device: Option<String>,
    ) -> PyResult<PyCompositor> {
        let raw = handle(comm)?;
        let settings = parse_settings((width, height), color, depth, mode, backend);
        let inner = run(py, || {
            // SAFETY: a handle of this process's MPI, from mpi4py's py2f.
            let mpi = unsafe { Mpi::on_fortran(raw) }?;
            let settings = settings.map_err(CompositeError::Invalid).and_then(|s| {
                let device = selector(device.as_deref()).map_err(|e| CompositeError::Invalid(e.message))?;
                Ok((s, device))
            });
            let (settings, device) = match settings {
                Ok((s, d)) => (Ok(s), d),
                Err(e) => (Err(e), engine::DeviceSelector::Auto),
            };
            Ok(Here(Compositor::agreed(Box::new(mpi), settings, &device)?))
        })?
        .0;
        Ok(PyCompositor { inner, last: Times::default() })
    }

    #[getter]
    fn rank(&self) -> usize {
        self.inner.rank()
    }

    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }

    /// The device the compositor runs on, or None on the CPU.
    #[getter]
    fn device(&self) -> Option<String> {
        self.inner.device()
    }

    #[getter]
    fn root(&self) -> usize {
        self.inner.root()
    }

    /// The last call's per-phase times on this rank, in milliseconds.
    #[getter]
    fn last_times<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in phases(&self.last) {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    #[getter]
    fn last_bytes_sent(&self) -> u64 {
        self.last.bytes_sent
    }

    /// Fails this call on every rank with `message` (collective): what a rank does when its
    /// own arguments could not even be read.
    fn refuse(&mut self, message: String) -> PyResult<()> {
        Err(Error::from(self.inner.refuse(message)).into())
    }

    /// Local settings: not collective (every rank sets the same).
    fn set_strategy(&mut self, strategy_name: &str) -> PyResult<()> {
        self.inner.set_strategy(strategy(strategy_name)?);
        Ok(())
    }

    fn set_order(&mut self, ranks_front_to_back: Vec<usize>) -> PyResult<()> {
        Ok(self.inner.set_order(&ranks_front_to_back).map_err(Error::from)?)
    }

    fn set_root(&mut self, root: usize) -> PyResult<()> {
        Ok(self.inner.set_root(root).map_err(Error::from)?)
    }

    fn set_background(&mut self, rgba: [f32; 4]) -> PyResult<()> {
        Ok(self.inner.set_background(rgba).map_err(Error::from)?)
    }

    /// Composites every rank's buffers (collective); (color, depth) on the root, None
    /// elsewhere.
    #[pyo3(signature = (color, depth = None, viewport = None))]
    fn composite<'py>(
        &mut self,
        py: Python<'py>,
        color: &Bound<'py, PyAny>,
        depth: Option<&Bound<'py, PyAny>>,
        viewport: Option<(i64, i64, i64, i64)>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        // Everything this rank can get wrong is found before the collective part, and
        // refused on every rank.
        let arrays = (|| {
            let c = AnyArray::extract(color, "color")?;
            let d = depth.map(|d| AnyArray::extract(d, "depth")).transpose()?;
            Ok::<_, Error>((c, d, self::viewport(viewport)?))
        })();
        let (c, d, vp) = match arrays {
            Ok(a) => a,
            Err(e) => {
                self.inner.refuse(e.message.clone());
                return Err(e.into());
            }
        };
        let (cv, dv) = (c.view(), d.as_ref().map(|d| d.view()));
        let (w, h) = self.inner.image_size();
        let n = w as usize * h as usize;
        let lent = Here(&mut self.inner);
        let out = run(py, move || {
            let lent = lent;
            let c = lent.0;
            let (samples, depth) = match check_inputs(c, &cv, dv.as_ref()) {
                Ok(s) => s,
                Err(e) => {
                    c.refuse(e.message.clone());
                    return Err(e);
                }
            };
            let root = c.rank() == c.root();
            let contiguous;
            let input = match &samples {
                Samples::Bytes(v) => match v.as_slice() {
                    Some(s) => Color::Rgba8(s),
                    None => {
                        contiguous = v.iter().copied().collect::<Vec<u8>>();
                        Color::Rgba8(&contiguous)
                    }
                },
                Samples::Floats(f) => Color::Rgba32F(f),
            };
            let mut out = match c.color_format() {
                ColorFormat::Rgba8 => Out::Bytes(vec![0; if root { 4 * n } else { 0 }]),
                ColorFormat::Rgba32F => Out::Floats(vec![0.0; if root { 4 * n } else { 0 }]),
            };
            let mut out_depth = vec![0.0f32; if root && depth.is_some() { n } else { 0 }];
            let target = match &mut out {
                Out::Bytes(b) => ColorMut::Rgba8(b),
                Out::Floats(f) => ColorMut::Rgba32F(f),
            };
            let has_depth = depth.is_some();
            c.composite_into(
                input,
                depth.as_deref(),
                vp,
                root.then_some(target),
                (root && has_depth).then_some(&mut out_depth[..]),
            )?;
            Ok((root, out, has_depth.then_some(out_depth), c.last()))
        });
        let (root, out, out_depth, last) = out?;
        self.last = last;
        if !root {
            return Ok(None);
        }
        let (h, w) = (h as usize, w as usize);
        let color = match out {
            Out::Bytes(b) => PyArray1::from_vec(py, b).reshape([h, w, 4])?.into_any(),
            Out::Floats(f) => PyArray1::from_vec(py, f).reshape([h, w, 4])?.into_any(),
        };
        let depth = match out_depth {
            Some(d) => PyArray1::from_vec(py, d).reshape([h, w])?.into_any(),
            None => py.None().into_bound(py),
        };
        Ok(Some(PyTuple::new(py, [color, depth])?))
    }
}
