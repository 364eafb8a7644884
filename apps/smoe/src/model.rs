//! The SMoE model: a Gaussian mixture over joint coordinate + colour space, its JSON
//! interchange format, its compact binary format, and validation that names the offending
//! kernel.
//!
//! Storage is flat (one `Vec` per parameter) so models with hundreds of thousands of
//! kernels stay compact. The covariance is kept as its packed lower triangle, row by row
//! (`cov[i][j]` for `j <= i` at `i*(i+1)/2 + j`), which is also the GPU's raw layout.

use std::io::{Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Errors reading, writing or validating a model.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
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
    extent: Vec<usize>,
    kernels: Vec<serde_json::Value>,
}

#[derive(Serialize, Deserialize)]
struct JsonKernel {
    pi: f64,
    mu: Vec<f64>,
    cov: Vec<Vec<f64>>,
}

/// Magic bytes of the binary format.
pub const BINARY_MAGIC: &[u8; 8] = b"SMOEBIN\0";
/// Version of the binary format.
pub const BINARY_VERSION: u32 = 1;

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

    /// Checks dimensions, extent, and every kernel (finite values, pi > 0, symmetric
    /// positive-definite covariance); errors name the kernel index.
    pub fn validate(&self) -> Result<()> {
        check_dims(self.coord_dims, self.color_dims)?;
        if self.extent.len() != self.coord_dims || self.extent.contains(&0) {
            return Err(ModelError::Invalid(format!(
                "extent must hold {} positive sizes, got {:?}",
                self.coord_dims, self.extent
            )));
        }
        if self.is_empty() {
            return Err(ModelError::Invalid("model has no kernels".into()));
        }
        let d = self.dims();
        if self.mu.len() != self.len() * d || self.cov.len() != self.len() * packed_len(d) {
            return Err(ModelError::Invalid("parameter arrays do not match the kernel count".into()));
        }
        for k in 0..self.len() {
            let bad = |message: String| ModelError::Kernel { index: k, message };
            let pi = self.pi[k];
            if !(pi.is_finite() && pi > 0.0) {
                return Err(bad(format!("pi must be positive and finite, got {pi}")));
            }
            if self.mean(k).iter().any(|v| !v.is_finite()) {
                return Err(bad("mu has a non-finite value".into()));
            }
            let cov = self.covariance(k);
            if cov.iter().any(|v| !v.is_finite()) {
                return Err(bad("cov has a non-finite value".into()));
            }
            if cholesky_packed(cov, d).is_none() {
                return Err(bad("covariance is not positive definite".into()));
            }
            // The renderer factorises the coordinate block on its own; it is a leading
            // principal block of a positive-definite matrix, hence positive definite too.
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
        let mut model = Model {
            coord_dims: h.coord_dims,
            color_dims: h.color_dims,
            color_space,
            extent: raw.extent,
            pi: Vec::with_capacity(raw.kernels.len()),
            mu: Vec::with_capacity(raw.kernels.len() * d),
            cov: Vec::with_capacity(raw.kernels.len() * packed_len(d)),
        };
        for (index, value) in raw.kernels.into_iter().enumerate() {
            let bad = |message: String| ModelError::Kernel { index, message };
            let k: JsonKernel = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
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

    /// The JSON interchange format.
    pub fn to_json(&self) -> String {
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
        let value = serde_json::json!({
            "format": "smoe",
            "version": 1,
            "coord_dims": self.coord_dims,
            "color_dims": self.color_dims,
            "color_space": self.color_space.name(),
            "extent": self.extent,
            "kernels": kernels,
        });
        serde_json::to_string(&value).unwrap_or_default()
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
        let records = self.raw_records();
        w.write_all(bytemuck::cast_slice(&records.iter().map(|v| v.to_le_bytes()).collect::<Vec<_>>()))
    }

    /// Reads the compact binary format, checking magic, version, sizes, then every kernel.
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
        let mut extent = Vec::new();
        for _ in 0..p {
            let mut b = [0u8; 4];
            r.read_exact(&mut b).map_err(|_| bad("truncated header"))?;
            extent.push(u32::from_le_bytes(b) as usize);
        }
        let mut b = [0u8; 8];
        r.read_exact(&mut b).map_err(|_| bad("truncated header"))?;
        let count = u64::from_le_bytes(b);
        let d = (p + q) as usize;
        let stride = 1 + d + packed_len(d);
        let expected = (count as u128) * (stride as u128) * 4;
        if expected != r.len() as u128 {
            return Err(bad(&format!("{count} kernels need {expected} bytes of records, file has {}", r.len())));
        }
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
        for rec in r.chunks_exact(stride * 4) {
            let f: Vec<f64> =
                rec.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect();
            model.pi.push(f[0]);
            model.mu.extend_from_slice(&f[1..1 + d]);
            model.cov.extend_from_slice(&f[1 + d..]);
        }
        model.validate()?;
        Ok(model)
    }

    /// Loads a model file, JSON or binary (told apart by the binary magic).
    pub fn load(path: &Path) -> Result<Model> {
        let file_err = |message: String| ModelError::File { path: path.display().to_string(), message };
        let bytes = std::fs::read(path).map_err(|e| file_err(e.to_string()))?;
        let parsed = if bytes.starts_with(BINARY_MAGIC) {
            Model::read_binary(&bytes)
        } else {
            let text = std::str::from_utf8(&bytes).map_err(|_| file_err("neither binary nor UTF-8 JSON".into()))?;
            Model::from_json(text)
        };
        parsed.map_err(|e| file_err(e.to_string()))
    }

    /// Saves atomically: binary when the path ends in `.smoe` or `.bin`, JSON otherwise.
    pub fn save(&self, path: &Path) -> engine::Result<()> {
        let binary = matches!(path.extension().and_then(|e| e.to_str()), Some("smoe" | "bin"));
        engine::io::write_atomic(path, |w| {
            let r = if binary { self.write_binary(w) } else { w.write_all(self.to_json().as_bytes()) };
            r.map_err(|e| engine::EngineError::File { path: path.to_path_buf(), message: e.to_string() })
        })
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
    let mut l = vec![0.0; packed_len(d)];
    for i in 0..d {
        for j in 0..=i {
            let mut s = a[packed_index(i, j)];
            for k in 0..j {
                s -= l[packed_index(i, k)] * l[packed_index(j, k)];
            }
            if i == j {
                if s.is_nan() || s <= 0.0 || !s.is_finite() {
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

    #[test]
    fn json_and_binary_round_trip() {
        let m = tiny();
        m.validate().unwrap();
        assert_eq!(Model::from_json(&m.to_json()).unwrap(), m);
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
    fn bad_kernels_are_named() {
        let mut m = tiny();
        m.pi[1] = 0.0;
        assert!(m.validate().unwrap_err().to_string().contains("kernel 1"));
        let mut m = tiny();
        m.cov[15] = -1.0;
        let e = Model::from_json(&m.to_json()).unwrap_err().to_string();
        assert!(e.contains("kernel 1") && e.contains("positive definite"), "{e}");
        let text = tiny().to_json().replacen("\"mu\":[0.25,0.5,0.1,0.2,0.3]", "\"mu\":[0.25,0.5]", 1);
        let e = Model::from_json(&text).unwrap_err().to_string();
        assert!(e.contains("kernel 0") && e.contains("mu has 2"), "{e}");
    }
}
