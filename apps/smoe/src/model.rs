//! The SMoE model: a Gaussian mixture over joint coordinate + colour space, its JSON
//! interchange format, its compact binary format, and validation that names the offending
//! kernel.
//!
//! Storage is flat (one `Vec` per parameter) so models with hundreds of thousands of
//! kernels stay compact. The covariance is kept as its packed lower triangle, row by row
//! (`cov[i][j]` for `j <= i` at `i*(i+1)/2 + j`), which is also the GPU's raw layout.
//!
//! Values are held in f64 but the GPU computes in f32, so [`Model::validate`] checks every
//! value in the precision both backends use (docs/formats.md, "Limits"): both readers, both
//! renderers and every writer apply it, so no file is written that a reader refuses and the
//! CPU and GPU backends accept the same models.

use std::io::{Read, Write};

use rayon::prelude::*;
use serde::de::{Deserializer, Error as _, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

/// The largest extent on any axis: the renderer's largest output side.
pub const MAX_EXTENT: u64 = 16384;
/// The most kernels a model holds (the GPU counts them in 32 bits; 2^24 light-field kernels
/// are 2.4 GB of records).
pub const MAX_KERNELS: u64 = 1 << 24;
/// The largest magnitude of a mean or covariance entry. Coordinates are normalised to
/// [0, 1] and colours lie near [0, 1]; the bound keeps every product the renderer forms
/// (a 2x2 determinant, an offset times a covariance) far inside f32's range.
pub const MAX_VALUE: f32 = 1e4;
/// The largest trace of the inverse coordinate covariance. It bounds the squared
/// Mahalanobis distance of any point within [`MAX_VALUE`] of a mean by
/// 4 (2 MAX_VALUE)^2 x 1e24 < 1e33, so a kernel's log-weight is finite in f32 everywhere.
pub const MAX_PRECISION: f64 = 1e24;
/// The extensions a model is written with: JSON, the binary format, or the compact format
/// (`crate::codec`).
pub const MODEL_EXTENSIONS: &[&str] = &["json", "smoe", "bin", "smc"];
/// Binary model files are at most this long (2^24 light-field records and the header);
/// JSON files at most eight times that.
pub(crate) const MAX_BINARY_BYTES: u64 = 64 + MAX_KERNELS * 36 * 4;

/// Errors reading, writing or validating a model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The file itself (missing, not a regular file, over the budget); names its path.
    #[error(transparent)]
    Input(#[from] kit::KitError),
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error("model: {0}")]
    Invalid(String),
    #[error("model: kernel {index}: {message}")]
    Kernel { index: usize, message: String },
}

pub type Result<T, E = ModelError> = std::result::Result<T, E>;

/// Colour space of the experts' outputs. Rendering always produces RGB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorSpace {
    Rgb,
    /// BT.601 full range, Cb and Cr centred on 0.5.
    YCbCr,
}

impl ColorSpace {
    pub fn name(self) -> &'static str {
        match self {
            ColorSpace::Rgb => "rgb",
            ColorSpace::YCbCr => "ycbcr",
        }
    }

    fn code(self) -> u32 {
        match self {
            ColorSpace::Rgb => 0,
            ColorSpace::YCbCr => 1,
        }
    }

    /// Converts one colour of this space to RGB.
    pub fn to_rgb(self, c: [f64; 3]) -> [f64; 3] {
        match self {
            ColorSpace::Rgb => c,
            ColorSpace::YCbCr => ycbcr_to_rgb(c),
        }
    }

    /// Largest absolute row sum of the (linear) map to RGB: how much a colour error in this
    /// space can grow in RGB.
    pub fn gain(self) -> f64 {
        match self {
            ColorSpace::Rgb => 1.0,
            ColorSpace::YCbCr => 1.0 + 0.344136 + 0.714136,
        }
    }
}

/// BT.601 full-range YCbCr (chroma centred on 0.5) to RGB.
pub fn ycbcr_to_rgb([y, cb, cr]: [f64; 3]) -> [f64; 3] {
    let (cb, cr) = (cb - 0.5, cr - 0.5);
    [y + 1.402 * cr, y - 0.344136 * cb - 0.714136 * cr, y + 1.772 * cb]
}

/// Number of packed lower-triangle entries of a `d x d` symmetric matrix.
pub fn packed_len(d: usize) -> usize {
    d * (d + 1) / 2
}

/// Index of entry (i, j) of a packed lower triangle (either order).
pub fn packed_index(i: usize, j: usize) -> usize {
    let (i, j) = if j > i { (j, i) } else { (i, j) };
    i * (i + 1) / 2 + j
}

/// A Steered Mixture-of-Experts model.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    /// p: 2 for images (x, y), 4 for light fields (x, y, u, v).
    pub coord_dims: usize,
    /// q: always 3 (three colour channels).
    pub color_dims: usize,
    pub color_space: ColorSpace,
    /// Pixels per coordinate axis: [W, H] or [W, H, U, V].
    pub extent: Vec<usize>,
    /// Priors, one per kernel.
    pub pi: Vec<f64>,
    /// Means, `dims()` per kernel (coordinates first, then colour).
    pub mu: Vec<f64>,
    /// Covariances, packed lower triangles of `dims() x dims()`, one per kernel.
    pub cov: Vec<f64>,
}

#[derive(Serialize, Deserialize)]
struct JsonHeader {
    format: String,
    version: u32,
    coord_dims: usize,
    color_dims: usize,
    #[serde(default = "default_color_space")]
    color_space: String,
}

fn default_color_space() -> String {
    "rgb".into()
}

#[derive(Deserialize)]
struct JsonModel {
    #[serde(flatten)]
    header: JsonHeader,
    /// u64, so a size past 32 bits is refused instead of wrapping when cast.
    extent: Vec<u64>,
    kernels: JsonKernels,
}

#[derive(Serialize)]
struct JsonModelOut<'a> {
    #[serde(flatten)]
    header: JsonHeader,
    extent: &'a [usize],
    kernels: Vec<JsonKernel>,
}

#[derive(Serialize, Deserialize)]
struct JsonKernel {
    pi: f64,
    mu: Vec<f64>,
    cov: Vec<Vec<f64>>,
}

/// The kernel list, parsed kernel by kernel so an error names the kernel and the count is
/// capped while parsing.
struct JsonKernels(Vec<JsonKernel>);

impl<'de> Deserialize<'de> for JsonKernels {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct List;
        impl<'de> Visitor<'de> for List {
            type Value = JsonKernels;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of kernels")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<JsonKernels, A::Error> {
                let mut out = Vec::new();
                loop {
                    let index = out.len();
                    match seq.next_element::<JsonKernel>() {
                        Ok(Some(_)) if index as u64 >= MAX_KERNELS => {
                            return Err(A::Error::custom(format!("more than {MAX_KERNELS} kernels")))
                        }
                        Ok(Some(k)) => out.push(k),
                        Ok(None) => return Ok(JsonKernels(out)),
                        Err(e) => return Err(A::Error::custom(format!("kernel {index}: {e}"))),
                    }
                }
            }
        }
        d.deserialize_seq(List)
    }
}

/// Magic bytes of the binary format.
pub const BINARY_MAGIC: &[u8; 8] = b"SMOEBIN\0";
/// Version of the binary format.
pub const BINARY_VERSION: u32 = 1;

/// The extent as sizes, checked before any cast: `p` sizes, each in 1..=[`MAX_EXTENT`].
fn extent_from(sizes: &[u64], p: usize) -> Result<Vec<usize>> {
    if sizes.len() != p || sizes.iter().any(|&e| !(1..=MAX_EXTENT).contains(&e)) {
        return Err(ModelError::Invalid(format!(
            "extent must hold {p} sizes between 1 and {MAX_EXTENT}, got {sizes:?}"
        )));
    }
    Ok(sizes.iter().map(|&e| e as usize).collect())
}

/// The Cholesky factor (packed lower) of the packed `d x d` matrix `a`, computed in f32 as
/// the GPU does; None unless every pivot is a positive normal f32.
fn cholesky_f32(a: &[f32], d: usize) -> Option<Vec<f32>> {
    cholesky(a, d, |s| s >= f32::MIN_POSITIVE && s.is_finite())
}

/// trace(S^-1) = |L^-1|_F^2 of the leading `p x p` block of a packed Cholesky factor, in f64.
fn inverse_trace(l: &[f32], p: usize) -> f64 {
    let mut sum = 0.0;
    for col in 0..p {
        // Column `col` of L^-1: solve L x = e_col.
        let mut x = vec![0.0f64; p];
        for i in col..p {
            let mut s = if i == col { 1.0 } else { 0.0 };
            for (m, xm) in x.iter().enumerate().take(i).skip(col) {
                s -= l[packed_index(i, m)] as f64 * xm;
            }
            x[i] = s / l[packed_index(i, i)] as f64;
        }
        sum += x.iter().map(|v| v * v).sum::<f64>();
    }
    sum
}

impl Model {
    /// p + q.
    pub fn dims(&self) -> usize {
        self.coord_dims + self.color_dims
    }

    /// Number of kernels K.
    pub fn len(&self) -> usize {
        self.pi.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pi.is_empty()
    }

    /// Mean of kernel k.
    pub fn mean(&self, k: usize) -> &[f64] {
        let d = self.dims();
        &self.mu[k * d..(k + 1) * d]
    }

    /// Packed covariance of kernel k.
    pub fn covariance(&self, k: usize) -> &[f64] {
        let n = packed_len(self.dims());
        &self.cov[k * n..(k + 1) * n]
    }

    /// Checks dimensions, extent (1..=[`MAX_EXTENT`] per axis), the kernel count
    /// (1..=[`MAX_KERNELS`]) and every kernel ([`Model::check_kernel`]); errors name the
    /// first bad kernel.
    pub fn validate(&self) -> Result<()> {
        check_dims(self.coord_dims, self.color_dims)?;
        extent_from(&self.extent.iter().map(|&e| e as u64).collect::<Vec<_>>(), self.coord_dims)?;
        if self.is_empty() || self.len() as u64 > MAX_KERNELS {
            return Err(ModelError::Invalid(format!(
                "a model holds 1 to {MAX_KERNELS} kernels, this one {}",
                self.len()
            )));
        }
        let d = self.dims();
        if self.mu.len() != self.len() * d || self.cov.len() != self.len() * packed_len(d) {
            return Err(ModelError::Invalid("parameter arrays do not match the kernel count".into()));
        }
        match (0..self.len()).into_par_iter().find_map_first(|k| self.check_kernel(k).err()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// This model without the kernels that fail [`Model::check_kernel`] (the priors of the
    /// others renormalised), and how many were left out; an error naming the first kernel
    /// when none passes.
    pub fn without_invalid_kernels(self) -> Result<(Model, usize)> {
        let keep: Vec<usize> = (0..self.len()).filter(|&k| self.check_kernel(k).is_ok()).collect();
        if keep.len() == self.len() || keep.is_empty() {
            return self.validate().map(|()| (self, 0));
        }
        let (d, tri, dropped) = (self.dims(), packed_len(self.dims()), self.len() - keep.len());
        let total: f64 = keep.iter().map(|&k| self.pi[k]).sum();
        let pi = keep.iter().map(|&k| self.pi[k] / total).collect();
        let mu = keep.iter().flat_map(|&k| self.mu[k * d..(k + 1) * d].iter().copied()).collect();
        let cov = keep.iter().flat_map(|&k| self.cov[k * tri..(k + 1) * tri].iter().copied()).collect();
        let model = Model { pi, mu, cov, ..self };
        model.validate()?;
        Ok((model, dropped))
    }

    /// One kernel, in the precision each backend computes in: `pi` a positive normal f32;
    /// every mean and covariance entry within [`MAX_VALUE`] (so finite in f32); the
    /// covariance positive definite both in f64 (the CPU backend) and, rounded to f32, in f32
    /// arithmetic (the GPU); and the coordinate block's inverse trace at most
    /// [`MAX_PRECISION`].
    pub(crate) fn check_kernel(&self, k: usize) -> Result<()> {
        let bad = |message: String| ModelError::Kernel { index: k, message };
        let pi = self.pi[k];
        if !((pi as f32) >= f32::MIN_POSITIVE && (pi as f32).is_finite()) {
            return Err(bad(format!(
                "pi must be a positive float32 between {:e} and {:e}, got {pi}",
                f32::MIN_POSITIVE,
                f32::MAX
            )));
        }
        let in_range = |v: f64| (v as f32).abs() <= MAX_VALUE;
        if let Some(i) = self.mean(k).iter().position(|&v| !in_range(v)) {
            return Err(bad(format!("mu[{i}] = {} is outside [-{MAX_VALUE:e}, {MAX_VALUE:e}]", self.mean(k)[i])));
        }
        let cov = self.covariance(k);
        if let Some(i) = cov.iter().position(|&v| !in_range(v)) {
            return Err(bad(format!("a covariance entry, {}, is outside [-{MAX_VALUE:e}, {MAX_VALUE:e}]", cov[i])));
        }
        let d = self.dims();
        let rounded: Vec<f32> = cov.iter().map(|&v| v as f32).collect();
        let (Some(_), Some(l)) = (cholesky_packed(cov, d), cholesky_f32(&rounded, d)) else {
            return Err(bad("covariance is not positive definite (in f64 and, rounded, in f32)".into()));
        };
        let precision = inverse_trace(&l, self.coord_dims);
        if precision.is_nan() || precision > MAX_PRECISION {
            return Err(bad(format!(
                "the coordinate covariance is nearly singular: the trace of its inverse is {precision:e}, above {MAX_PRECISION:e}"
            )));
        }
        Ok(())
    }

    /// Parses the JSON interchange format and validates it.
    pub fn from_json(text: &str) -> Result<Model> {
        let raw: JsonModel =
            serde_json::from_str(text).map_err(|e| ModelError::Invalid(format!("not a valid SMoE JSON model: {e}")))?;
        let h = raw.header;
        if h.format != "smoe" {
            return Err(ModelError::Invalid(format!("format must be \"smoe\", got {:?}", h.format)));
        }
        if h.version != 1 {
            return Err(ModelError::Invalid(format!("unsupported version {}", h.version)));
        }
        let color_space = match h.color_space.as_str() {
            "rgb" => ColorSpace::Rgb,
            "ycbcr" => ColorSpace::YCbCr,
            other => return Err(ModelError::Invalid(format!("color_space must be rgb or ycbcr, got {other:?}"))),
        };
        check_dims(h.coord_dims, h.color_dims)?;
        let d = h.coord_dims + h.color_dims;
        let kernels = raw.kernels.0;
        let mut model = Model {
            coord_dims: h.coord_dims,
            color_dims: h.color_dims,
            color_space,
            extent: extent_from(&raw.extent, h.coord_dims)?,
            pi: Vec::with_capacity(kernels.len()),
            mu: Vec::with_capacity(kernels.len() * d),
            cov: Vec::with_capacity(kernels.len() * packed_len(d)),
        };
        for (index, k) in kernels.into_iter().enumerate() {
            let bad = |message: String| ModelError::Kernel { index, message };
            if k.mu.len() != d {
                return Err(bad(format!("mu has {} values, expected p+q = {d}", k.mu.len())));
            }
            if k.cov.len() != d || k.cov.iter().any(|row| row.len() != d) {
                return Err(bad(format!("cov must be a {d}x{d} matrix")));
            }
            for i in 0..d {
                for j in 0..i {
                    let (a, b) = (k.cov[i][j], k.cov[j][i]);
                    // Relative to the scale of the matrix, so round-off in near-zero
                    // entries (common in fitted models) passes.
                    let scale = (k.cov[i][i] * k.cov[j][j]).abs().sqrt() + a.abs() + b.abs();
                    if (a - b).abs() > 1e-9 * scale {
                        return Err(bad(format!("cov is not symmetric at ({i},{j}): {a} vs {b}")));
                    }
                }
            }
            model.pi.push(k.pi);
            model.mu.extend_from_slice(&k.mu);
            for i in 0..d {
                for j in 0..=i {
                    model.cov.push(k.cov[i][j]);
                }
            }
        }
        model.validate()?;
        Ok(model)
    }

    /// The JSON interchange format (f64 values; the model should be valid).
    pub fn to_json(&self) -> Result<String> {
        let d = self.dims();
        let kernels: Vec<JsonKernel> = (0..self.len())
            .map(|k| {
                let c = self.covariance(k);
                JsonKernel {
                    pi: self.pi[k],
                    mu: self.mean(k).to_vec(),
                    cov: (0..d).map(|i| (0..d).map(|j| c[packed_index(i, j)]).collect()).collect(),
                }
            })
            .collect();
        let out = JsonModelOut {
            header: JsonHeader {
                format: "smoe".into(),
                version: 1,
                coord_dims: self.coord_dims,
                color_dims: self.color_dims,
                color_space: self.color_space.name().into(),
            },
            extent: &self.extent,
            kernels,
        };
        serde_json::to_string(&out).map_err(|e| ModelError::Invalid(format!("cannot write JSON: {e}")))
    }

    /// The model as the binary format stores it: every prior, mean and covariance entry
    /// rounded to f32. A covariance that passes [`Model::validate`] in f64 can fail it once
    /// rounded (a pivot near zero), so writers validate this copy.
    pub fn rounded_to_f32(&self) -> Model {
        let round = |v: &Vec<f64>| v.iter().map(|&x| x as f32 as f64).collect();
        Model { pi: round(&self.pi), mu: round(&self.mu), cov: round(&self.cov), ..self.clone() }
    }

    /// Values of one kernel's raw record: pi, mu (p+q), packed covariance (f32, as on the
    /// GPU and in the binary format).
    pub fn raw_record(&self, k: usize, out: &mut Vec<f32>) {
        out.push(self.pi[k] as f32);
        out.extend(self.mean(k).iter().map(|&v| v as f32));
        out.extend(self.covariance(k).iter().map(|&v| v as f32));
    }

    /// Floats per raw record: 1 + (p+q) + (p+q)(p+q+1)/2.
    pub fn raw_stride(&self) -> usize {
        1 + self.dims() + packed_len(self.dims())
    }

    /// All raw records, back to back.
    pub fn raw_records(&self) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.len() * self.raw_stride());
        for k in 0..self.len() {
            self.raw_record(k, &mut out);
        }
        out
    }

    /// Writes the compact binary format (see docs/formats.md).
    pub fn write_binary(&self, w: &mut impl Write) -> std::io::Result<()> {
        w.write_all(BINARY_MAGIC)?;
        for v in [BINARY_VERSION, self.coord_dims as u32, self.color_dims as u32, self.color_space.code()] {
            w.write_all(&v.to_le_bytes())?;
        }
        for &e in &self.extent {
            w.write_all(&(e as u32).to_le_bytes())?;
        }
        w.write_all(&(self.len() as u64).to_le_bytes())?;
        let mut record = Vec::with_capacity(self.raw_stride());
        for k in 0..self.len() {
            record.clear();
            self.raw_record(k, &mut record);
            w.write_all(bytemuck::cast_slice(&record.iter().map(|v| v.to_le_bytes()).collect::<Vec<_>>()))?;
        }
        Ok(())
    }

    /// Reads the compact binary format: magic, version, dimensions and extent; the kernel
    /// count against [`MAX_KERNELS`], the bytes present and the memory budget before
    /// allocating; then every kernel.
    pub fn read_binary(bytes: &[u8]) -> Result<Model> {
        let bad = |m: &str| ModelError::Invalid(format!("binary model: {m}"));
        let mut r = bytes;
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic).map_err(|_| bad("file too short"))?;
        if &magic != BINARY_MAGIC {
            return Err(bad("bad magic"));
        }
        let mut u32s = [0u32; 4];
        for v in &mut u32s {
            let mut b = [0u8; 4];
            r.read_exact(&mut b).map_err(|_| bad("truncated header"))?;
            *v = u32::from_le_bytes(b);
        }
        let [version, p, q, cs] = u32s;
        if version != BINARY_VERSION {
            return Err(bad(&format!("unsupported version {version}")));
        }
        if (p != 2 && p != 4) || q != 3 {
            return Err(bad(&format!("unsupported dimensions p={p}, q={q}")));
        }
        let color_space = match cs {
            0 => ColorSpace::Rgb,
            1 => ColorSpace::YCbCr,
            _ => return Err(bad(&format!("unknown colour space code {cs}"))),
        };
        let mut sizes = Vec::new();
        for _ in 0..p {
            let mut b = [0u8; 4];
            r.read_exact(&mut b).map_err(|_| bad("truncated header"))?;
            sizes.push(u32::from_le_bytes(b) as u64);
        }
        let extent = extent_from(&sizes, p as usize)?;
        let mut b = [0u8; 8];
        r.read_exact(&mut b).map_err(|_| bad("truncated header"))?;
        let count = u64::from_le_bytes(b);
        if !(1..=MAX_KERNELS).contains(&count) {
            return Err(bad(&format!("{count} kernels; a model holds 1 to {MAX_KERNELS}")));
        }
        let d = (p + q) as usize;
        let stride = 1 + d + packed_len(d);
        // count <= 2^24 and stride <= 36: no overflow.
        let expected = count * stride as u64 * 4;
        if expected != r.len() as u64 {
            return Err(bad(&format!("{count} kernels need {expected} bytes of records, the file has {}", r.len())));
        }
        // The f64 model: 8 bytes per stored f32 value.
        kit::budget::elements(&[count, stride as u64], 8, "the binary model")?;
        let count = count as usize;
        let mut model = Model {
            coord_dims: p as usize,
            color_dims: q as usize,
            color_space,
            extent,
            pi: Vec::with_capacity(count),
            mu: Vec::with_capacity(count * d),
            cov: Vec::with_capacity(count * packed_len(d)),
        };
        let value = |c: &[u8]| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64;
        for rec in r.chunks_exact(stride * 4) {
            let mut values = rec.chunks_exact(4).map(value);
            model.pi.extend(values.next());
            model.mu.extend(values.by_ref().take(d));
            model.cov.extend(values);
        }
        model.validate()?;
        Ok(model)
    }
}

fn check_dims(p: usize, q: usize) -> Result<()> {
    if p != 2 && p != 4 {
        return Err(ModelError::Invalid(format!("coord_dims must be 2 or 4, got {p}")));
    }
    if q != 3 {
        return Err(ModelError::Invalid(format!("color_dims must be 3, got {q}")));
    }
    Ok(())
}

/// Cholesky factor (packed lower) of a packed symmetric `d x d` matrix, or None when it is not
/// positive definite.
pub fn cholesky_packed(a: &[f64], d: usize) -> Option<Vec<f64>> {
    cholesky(a, d, |s| s > 0.0 && s.is_finite())
}

/// The floats the Cholesky factorisation runs in.
trait Real:
    Copy + Default + std::ops::Sub<Output = Self> + std::ops::Mul<Output = Self> + std::ops::Div<Output = Self>
{
    fn sqrt(self) -> Self;
}

impl Real for f32 {
    fn sqrt(self) -> f32 {
        f32::sqrt(self)
    }
}

impl Real for f64 {
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
}

/// The Cholesky factor (packed lower) of the packed symmetric `d x d` matrix `a` in the
/// precision of `T`; None unless every pivot passes `pivot_ok`.
fn cholesky<T: Real>(a: &[T], d: usize, pivot_ok: impl Fn(T) -> bool) -> Option<Vec<T>> {
    let mut l = vec![T::default(); packed_len(d)];
    for i in 0..d {
        for j in 0..=i {
            let mut s = a[packed_index(i, j)];
            for k in 0..j {
                s = s - l[packed_index(i, k)] * l[packed_index(j, k)];
            }
            if i == j {
                if !pivot_ok(s) {
                    return None;
                }
                l[packed_index(i, i)] = s.sqrt();
            } else {
                l[packed_index(i, j)] = s / l[packed_index(j, j)];
            }
        }
    }
    Some(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Model {
        let mut m = Model {
            coord_dims: 2,
            color_dims: 3,
            color_space: ColorSpace::Rgb,
            extent: vec![4, 3],
            pi: vec![0.5, 0.5],
            mu: vec![0.25, 0.5, 0.1, 0.2, 0.3, 0.75, 0.5, 0.9, 0.8, 0.7],
            cov: Vec::new(),
        };
        for _ in 0..2 {
            for i in 0..5 {
                for j in 0..=i {
                    m.cov.push(if i == j { 0.01 } else { 0.001 });
                }
            }
        }
        m
    }

    /// A kernel with a NaN prior is left out and the other's prior renormalised; a model of
    /// no valid kernel is refused, naming the first.
    #[test]
    fn invalid_kernels_are_left_out() {
        let mut m = tiny();
        m.pi[1] = f64::NAN;
        let (kept, dropped) = m.clone().without_invalid_kernels().unwrap();
        assert_eq!((kept.len(), dropped, kept.pi[0]), (1, 1, 1.0));
        assert_eq!(kept.mu, m.mu[..5]);
        m.pi[0] = f64::NAN;
        let e = m.without_invalid_kernels().unwrap_err().to_string();
        assert!(e.contains("kernel 0") && e.contains("NaN"), "{e}");
        let (same, none) = tiny().without_invalid_kernels().unwrap();
        assert_eq!((same, none), (tiny(), 0));
    }

    #[test]
    fn json_and_binary_round_trip() {
        let m = tiny();
        m.validate().unwrap();
        assert_eq!(Model::from_json(&m.to_json().unwrap()).unwrap(), m);
        let mut bytes = Vec::new();
        m.write_binary(&mut bytes).unwrap();
        let b = Model::read_binary(&bytes).unwrap();
        assert_eq!(b.len(), 2);
        for (x, y) in b.mu.iter().zip(&m.mu) {
            assert!((x - y).abs() < 1e-7);
        }
        assert!(Model::read_binary(&bytes[..bytes.len() - 1]).is_err());
    }

    #[test]
    fn load_errors_name_the_file_once() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, bytes: &[u8]| kit::testing::write_file(dir.path(), name, bytes);
        let text = tiny().to_json().unwrap();
        let cut = write("cut.json", &text.as_bytes()[..text.len() / 2]);
        let e = Model::load(&cut).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: not a valid SMoE JSON model: ", cut.display())), "{e}");
        let mut m = tiny();
        m.pi[1] = 0.0;
        let zero = write("zero.json", m.to_json().unwrap().as_bytes());
        let e = Model::load(&zero).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: kernel 1: ", zero.display())), "{e}");
        let png = write("image.png", b"\x89PNG\r\n\x1a\n\xff\xfe");
        let e = Model::load(&png).unwrap_err().to_string();
        assert!(
            e.ends_with("image.png: not a SMoE model (neither .smc, the binary format .smoe/.bin, nor UTF-8 JSON)"),
            "{e}"
        );
        assert!(!e.contains("model: "), "{e}");
    }

    #[test]
    fn bad_kernels_are_named() {
        let mut m = tiny();
        m.pi[1] = 0.0;
        assert!(m.validate().unwrap_err().to_string().contains("kernel 1"));
        let mut m = tiny();
        m.cov[15] = -1.0;
        let e = Model::from_json(&m.to_json().unwrap()).unwrap_err().to_string();
        assert!(e.contains("kernel 1") && e.contains("positive definite"), "{e}");
        let text = tiny().to_json().unwrap().replacen("\"mu\":[0.25,0.5,0.1,0.2,0.3]", "\"mu\":[0.25,0.5]", 1);
        let e = Model::from_json(&text).unwrap_err().to_string();
        assert!(e.contains("kernel 0") && e.contains("mu has 2"), "{e}");
    }
}
