//! `tessera.composite.blend`: sort-last compositing of partial images in one process: each
//! (colour, depth) pair is Active Pixel encoded and the encoded images are composited, on
//! the GPU or the CPU, as `composite encode` and `composite blend` do with files.

use composite::ap::{pack_rgba, pixel_count, Encoded};
use composite::frame::Frame;
use composite::gpu::blend::GpuBlender;
use composite::gpu::encode::GpuEncoder;
use composite::types::Op;
use composite::CompositeError;
use numpy::ndarray::ArrayView3;
use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use crate::arrays::{check_unit, image3, AnyArray, AnyView, Layout, Sample};
use crate::devices::{shared_context, Backend};
use crate::errors::{run, Error, Kind, Result};
use crate::with_view;

impl From<CompositeError> for Error {
    fn from(e: CompositeError) -> Error {
        match e {
            CompositeError::Kit(e) => e.into(),
            CompositeError::Engine(e) => e.into(),
            e if e.is_argument() => Error::invalid(e.to_string()),
            other => Error::new(Kind::Failed, other.to_string()),
        }
    }
}

/// Packed RGBA8 words of a colour image (RGB gets alpha 255, gray is repeated).
fn rgba_words<T: Sample>(img: ArrayView3<'_, T>) -> Vec<u32> {
    let (h, w, c) = img.dim();
    let mut out = Vec::with_capacity(h * w);
    for y in 0..h {
        for x in 0..w {
            let s = |k: usize| img[[y, x, k]].to_u8();
            let px = match c {
                1 => [s(0), s(0), s(0), 255],
                2 => [s(0), s(0), s(0), s(1)],
                3 => [s(0), s(1), s(2), 255],
                _ => [s(0), s(1), s(2), s(3)],
            };
            out.push(pack_rgba(px));
        }
    }
    out
}

/// One input's frame: colour HxWxC, depth HxW float32/float64 (finite; 1.0 = background).
fn frame(color: &AnyView<'_>, depth: &AnyView<'_>, i: usize) -> Result<Frame> {
    let what = format!("colors[{i}]");
    let words = with_view!(color, v => {
        let img = image3(v.clone(), Layout::Hwc, &what)?;
        check_unit(&img, &what)?;
        rgba_words(img)
    });
    let cshape = color.shape();
    let (h, w) = (cshape[0], cshape[1]);
    let dwhat = format!("depths[{i}]");
    let depth: Vec<f32> = match depth {
        AnyView::F32(v) if v.shape() == [h, w] => v.iter().copied().collect(),
        AnyView::F64(v) if v.shape() == [h, w] => v.iter().map(|&x| x as f32).collect(),
        AnyView::F32(_) | AnyView::F64(_) => {
            return Err(Error::invalid(format!(
                "{dwhat}: shape {} but colors[{i}] is {w}x{h}; expected ({h}, {w})",
                crate::arrays::shape_text(depth.shape())
            )))
        }
        _ => return Err(Error::invalid(format!("{dwhat}: depth must be float32 or float64"))),
    };
    if let Some(k) = depth.iter().position(|d| !d.is_finite()) {
        return Err(Error::invalid(format!("{dwhat}: the depth at row {}, column {} is {}", k / w, k % w, depth[k])));
    }
    pixel_count(w as u32, h as u32)?;
    Ok(Frame { width: w as u32, height: h as u32, color: words, depth })
}

/// Composites partial images (first = front): `colors[i]` HxWx4 (premultiplied RGBA for
/// "over"), HxWx3 or HxW, `depths[i]` HxW. Returns (RGBA uint8 HxWx4, depth float32 HxW).
#[pyfunction]
#[pyo3(signature = (colors, depths, op = "zbuffer", backend = "gpu", device = None))]
pub fn composite_blend<'py>(
    py: Python<'py>,
    colors: Vec<Bound<'py, PyAny>>,
    depths: Vec<Bound<'py, PyAny>>,
    op: &str,
    backend: &str,
    device: Option<String>,
) -> PyResult<Bound<'py, PyTuple>> {
    let op = match op {
        "zbuffer" => Op::ZBuffer,
        "over" => Op::Over,
        other => return Err(Error::invalid(format!("op must be \"zbuffer\" or \"over\"; got {other:?}")).into()),
    };
    let backend = Backend::parse(backend)?;
    if colors.is_empty() || colors.len() != depths.len() {
        return Err(Error::invalid(format!(
            "{} colour images and {} depth images; give one depth per colour image, at least one",
            colors.len(),
            depths.len()
        ))
        .into());
    }
    let c: Vec<AnyArray<'py>> =
        colors.iter().enumerate().map(|(i, a)| AnyArray::extract(a, &format!("colors[{i}]"))).collect::<Result<_>>()?;
    let d: Vec<AnyArray<'py>> =
        depths.iter().enumerate().map(|(i, a)| AnyArray::extract(a, &format!("depths[{i}]"))).collect::<Result<_>>()?;
    let views: Vec<(AnyView<'_>, AnyView<'_>)> = c.iter().zip(&d).map(|(c, d)| (c.view(), d.view())).collect();
    let frame_out = run(py, || {
        let frames: Vec<Frame> = views.iter().enumerate().map(|(i, (c, d))| frame(c, d, i)).collect::<Result<_>>()?;
        let (w, h) = (frames[0].width, frames[0].height);
        if let Some(i) = frames.iter().position(|f| (f.width, f.height) != (w, h)) {
            return Err(Error::invalid(format!(
                "image sizes differ: input 0 is {w}x{h}, input {i} is {}x{}",
                frames[i].width, frames[i].height
            )));
        }
        let bytes = (w as u64 * h as u64).saturating_mul(8).saturating_mul(frames.len() as u64 + 2);
        kit::budget::check(bytes, format!("compositing {} images of {w}x{h}", frames.len()))?;
        let result: Encoded = match backend {
            Backend::Cpu => {
                let encoded: Vec<Encoded> = frames.iter().map(composite::cpu::encode::encode_parallel).collect();
                let refs: Vec<&Encoded> = encoded.iter().collect();
                composite::cpu::blend::composite(&refs, op)?
            }
            Backend::Gpu => {
                let ctx = shared_context(device.as_deref())?;
                let mut encoder = GpuEncoder::new(&ctx)?;
                let encoded = frames
                    .iter()
                    .map(|f| -> Result<Encoded> {
                        let c = ctx.upload(&f.color, "colour")?;
                        let d = ctx.upload(&f.depth, "depth")?;
                        Ok(encoder.encode(&c, &d, f.width, f.height)?.0)
                    })
                    .collect::<Result<Vec<_>>>()?;
                let refs: Vec<&Encoded> = encoded.iter().collect();
                GpuBlender::new(&ctx)?.composite(&refs, op)?
            }
        };
        Ok(Frame::decode(&result, w, h))
    })?;
    let (w, h) = (frame_out.width as usize, frame_out.height as usize);
    let rgba: Vec<u8> = frame_out.color.iter().flat_map(|c| c.to_le_bytes()).collect();
    let color = PyArray1::from_vec(py, rgba).reshape([h, w, 4])?;
    let depth = PyArray1::from_vec(py, frame_out.depth).reshape([h, w])?;
    PyTuple::new(py, [color.into_any(), depth.into_any()])
}
