//! numpy arrays in: any of the four sample types the package reads (uint8, uint16, float32,
//! float64), any strides (a transposed or sliced view is read where it lies), read-only
//! arrays included, and the image shapes the API takes.

use numpy::ndarray::{ArrayView3, ArrayViewD, Axis, Ix3};
use numpy::{PyReadonlyArrayDyn, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::errors::{Error, Result};

/// How a sample type's values map to [0, 1].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Integers 0..=255.
    Eight,
    /// Integers 0..=65535.
    Sixteen,
    /// Floats in [0, 1].
    Unit,
}

/// A sample type the package reads (each converts to f64 exactly).
pub trait Sample: Copy + Send + Sync + numpy::Element + Into<f64> + 'static {
    const SCALE: Scale;

    fn value(self) -> f64 {
        self.into()
    }

    /// The sample as an 8-bit value (16-bit and float rounded).
    fn to_u8(self) -> u8 {
        let v = self.value();
        match Self::SCALE {
            Scale::Eight => v as u8,
            Scale::Sixteen => (v / 257.0).round() as u8,
            Scale::Unit => kit::image::to_u8(v as f32),
        }
    }
}

impl Sample for u8 {
    const SCALE: Scale = Scale::Eight;
}

impl Sample for u16 {
    const SCALE: Scale = Scale::Sixteen;
}

impl Sample for f32 {
    const SCALE: Scale = Scale::Unit;
}

impl Sample for f64 {
    const SCALE: Scale = Scale::Unit;
}

/// A borrowed numpy array of one of the sample types.
pub enum AnyArray<'py> {
    U8(PyReadonlyArrayDyn<'py, u8>),
    U16(PyReadonlyArrayDyn<'py, u16>),
    F32(PyReadonlyArrayDyn<'py, f32>),
    F64(PyReadonlyArrayDyn<'py, f64>),
}

/// A view of an [`AnyArray`], which can cross into work without the GIL.
#[derive(Clone)]
pub enum AnyView<'a> {
    U8(ArrayViewD<'a, u8>),
    U16(ArrayViewD<'a, u16>),
    F32(ArrayViewD<'a, f32>),
    F64(ArrayViewD<'a, f64>),
}

/// Calls `$body` with `$v` bound to the typed view of an [`AnyView`].
#[macro_export]
macro_rules! with_view {
    ($view:expr, $v:ident => $body:expr) => {
        match $view {
            $crate::arrays::AnyView::U8($v) => $body,
            $crate::arrays::AnyView::U16($v) => $body,
            $crate::arrays::AnyView::F32($v) => $body,
            $crate::arrays::AnyView::F64($v) => $body,
        }
    };
}

impl<'py> AnyArray<'py> {
    /// Borrows `obj` (a numpy array) as one of the sample types; `what` names it in errors.
    pub fn extract(obj: &Bound<'py, PyAny>, what: &str) -> Result<AnyArray<'py>> {
        let untyped = obj.cast::<PyUntypedArray>().map_err(|_| {
            let type_name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
            Error::invalid(format!("{what}: expected a numpy array, got {type_name}"))
        })?;
        let dtype = untyped.dtype().to_string();
        let array = match dtype.as_str() {
            "uint8" => obj.extract().map(AnyArray::U8),
            "uint16" => obj.extract().map(AnyArray::U16),
            "float32" => obj.extract().map(AnyArray::F32),
            "float64" => obj.extract().map(AnyArray::F64),
            _ => {
                return Err(Error::invalid(format!(
                "{what}: dtype {dtype} is not read; give uint8, uint16 (scaled to [0, 1]) or float32/float64 in [0, 1]"
            )))
            }
        };
        array.map_err(|e| Error::invalid(format!("{what}: {e}")))
    }

    pub fn view(&self) -> AnyView<'_> {
        match self {
            AnyArray::U8(a) => AnyView::U8(a.as_array()),
            AnyArray::U16(a) => AnyView::U16(a.as_array()),
            AnyArray::F32(a) => AnyView::F32(a.as_array()),
            AnyArray::F64(a) => AnyView::F64(a.as_array()),
        }
    }
}

impl AnyView<'_> {
    pub fn shape(&self) -> &[usize] {
        with_view!(self, v => v.shape())
    }
}

/// The shape as Python prints it: `(3, 4)`.
pub fn shape_text(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// How an image's axes are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// HxW or HxWxC.
    Hwc,
    /// CxHxW (one image of an NxCxHxW batch).
    Chw,
}

/// An image as (rows, columns, channels) with 1 to 4 channels, whatever its strides.
pub fn image3<'a, T>(a: ArrayViewD<'a, T>, layout: Layout, what: &str) -> Result<ArrayView3<'a, T>> {
    let shape = a.shape().to_vec();
    let bad = || {
        let expected = match layout {
            Layout::Hwc => "an image of shape HxW, HxWx3 or HxWx4",
            Layout::Chw => "images of shape CxHxW with C = 1, 3 or 4",
        };
        Error::invalid(format!("{what}: expected {expected}; got shape {}", shape_text(&shape)))
    };
    let view = match (layout, shape.len()) {
        (Layout::Hwc, 2) => a.insert_axis(Axis(2)),
        (Layout::Hwc, 3) => a,
        (Layout::Chw, 3) => a.permuted_axes(vec![1, 2, 0]),
        _ => return Err(bad()),
    };
    let view = view.into_dimensionality::<Ix3>().map_err(|_| bad())?;
    let (h, w, c) = view.dim();
    if !(1..=4).contains(&c) || h == 0 || w == 0 {
        return Err(bad());
    }
    Ok(view)
}

/// Checks that every sample of a float image is finite and in [0, 1], naming the first that
/// is not by its row, column and channel.
pub fn check_unit<T: Sample>(img: &ArrayView3<'_, T>, what: &str) -> Result<()> {
    if T::SCALE != Scale::Unit {
        return Ok(());
    }
    let bad = img.indexed_iter().find(|(_, v)| !(0.0..=1.0).contains(&(**v).value()));
    match bad {
        None => Ok(()),
        Some(((y, x, c), &v)) => {
            let v = v.value();
            let problem = if v.is_nan() { "NaN".to_string() } else { format!("{v}, outside [0, 1]") };
            Err(Error::invalid(format!("{what}: the sample at row {y}, column {x}, channel {c} is {problem}")))
        }
    }
}
