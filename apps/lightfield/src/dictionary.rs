//! The dictionary ensemble: K dictionaries, each one orthonormal matrix per patch mode;
//! its `.lfd` file; and the n-mode products that move a patch into a dictionary's
//! coefficient space (analysis, `X = T x_1 U1^T ... x_5 U5^T`) and back (synthesis).
//!
//! Matrix storage: dictionary k holds its five matrices one after the other in mode order
//! (view row, view column, pixel row, pixel column, colour), each `m x m` row-major with the
//! basis vectors in the columns. The same layout goes to the GPU and into both files.

use std::path::Path;

use crate::bytes::{fnv1a64, ByteReader, LFD_MAGIC};
use crate::error::{LfError, Result};
use crate::linalg::{orthonormality_error, svd, Mat};
use crate::patch::{PatchShape, MODES};

/// `.lfd` version (its magic is [`LFD_MAGIC`]).
pub const LFD_VERSION: u32 = 1;
/// Largest number of dictionaries a file may declare.
pub const MAX_DICTIONARIES: usize = 65536;
/// How far from orthonormal a stored matrix may be (f32 storage of f64 training results
/// lands near 1e-7; anything beyond this is a broken file).
const ORTHONORMAL_TOLERANCE: f64 = 1e-3;

#[derive(Clone, Debug, PartialEq)]
pub struct Ensemble {
    pub shape: PatchShape,
    pub k: usize,
    pub mats: Vec<f32>,
}

/// Offsets of each mode's matrix inside one dictionary, and the dictionary's float count.
pub fn mode_offsets(shape: PatchShape) -> ([usize; MODES], usize) {
    let mut offsets = [0; MODES];
    let mut total = 0;
    for (n, m) in shape.modes().into_iter().enumerate() {
        offsets[n] = total;
        total += m * m;
    }
    (offsets, total)
}

impl Ensemble {
    /// `k` random dictionaries (orthonormal factors of random matrices), for tests and as a
    /// deterministic starting point.
    /// One dictionary of separable orthonormal DCT-II bases, one per mode (column k of an
    /// m x m matrix is `c_k cos(pi (2i + 1) k / 2m)` over i, c_0 = sqrt(1/m), else
    /// sqrt(2/m)): a fixed transform that needs no training light fields. On the rendered
    /// 9 x 9 scenes it codes patches of the whole view grid in fewer bytes than an ensemble
    /// trained on other scenes (BENCHMARKS.md), and at a quarter of K = 4's dictionary bytes.
    pub fn dct(shape: PatchShape) -> Ensemble {
        let mut mats = Vec::new();
        for m in shape.modes() {
            for i in 0..m {
                for k in 0..m {
                    let c = if k == 0 { (1.0 / m as f64).sqrt() } else { (2.0 / m as f64).sqrt() };
                    let angle = std::f64::consts::PI * (2 * i + 1) as f64 * k as f64 / (2 * m) as f64;
                    mats.push((c * angle.cos()) as f32);
                }
            }
        }
        Ensemble { shape, k: 1, mats }
    }

    pub fn random(shape: PatchShape, k: usize, seed: u64) -> Ensemble {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut mats = Vec::new();
        for _ in 0..k {
            for m in shape.modes() {
                let mut a = Mat::zeros(m);
                a.a.iter_mut().for_each(|x| *x = rng.gen_range(-1.0..1.0));
                mats.extend(svd(&a).u.a.iter().map(|&x| x as f32));
            }
        }
        Ensemble { shape, k, mats }
    }

    /// Floats in one dictionary (sum of m^2 over the modes).
    pub fn dictionary_len(&self) -> usize {
        mode_offsets(self.shape).1
    }

    /// The matrices of dictionary `k`.
    pub fn dictionary(&self, k: usize) -> &[f32] {
        let d = self.dictionary_len();
        &self.mats[k * d..(k + 1) * d]
    }

    /// Checks sizes, finiteness and that every matrix is orthonormal (the error identity the
    /// encoder relies on holds only then).
    pub fn validate(&self) -> Result<()> {
        self.shape.check()?;
        if self.k == 0 || self.k > MAX_DICTIONARIES {
            return Err(LfError::EnsembleSize { k: self.k, max: MAX_DICTIONARIES });
        }
        if self.mats.len() != self.k * self.dictionary_len() {
            return Err(LfError::DictionaryLength);
        }
        if self.mats.iter().any(|x| !x.is_finite()) {
            return Err(LfError::DictionaryNotFinite);
        }
        let (offsets, _) = mode_offsets(self.shape);
        for k in 0..self.k {
            for (n, m) in self.shape.modes().into_iter().enumerate() {
                let q = &self.dictionary(k)[offsets[n]..offsets[n] + m * m];
                let err = orthonormality_error(q, m);
                if err > ORTHONORMAL_TOLERANCE {
                    return Err(LfError::NotOrthonormal { dictionary: k, mode: n, error: err });
                }
            }
        }
        Ok(())
    }

    /// Serialises shape, count and matrices (the part shared by `.lfd` and `.lfc`).
    pub fn write_body(&self, out: &mut Vec<u8>) {
        for m in self.shape.modes() {
            out.extend_from_slice(&(m as u32).to_le_bytes());
        }
        out.extend_from_slice(&(self.k as u32).to_le_bytes());
        for x in &self.mats {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }

    /// Reads what [`Ensemble::write_body`] wrote, checking every size before trusting it.
    pub fn read_body(r: &mut ByteReader<'_>) -> Result<Ensemble> {
        let modes: Vec<usize> = (0..MODES).map(|_| r.u32().map(|m| m as usize)).collect::<Result<_>>()?;
        if modes[4] != crate::lightfield::COLOURS {
            return Err(r.error(format!("colour mode has size {}, expected 3", modes[4])));
        }
        let shape = PatchShape { mu: modes[0], mv: modes[1], my: modes[2], mx: modes[3] };
        shape.check().map_err(|e| r.error(e))?;
        let k = r.u32()? as usize;
        if k == 0 || k > MAX_DICTIONARIES {
            return Err(r.error(format!("{k} dictionaries; expected 1..={MAX_DICTIONARIES}")));
        }
        let dims = [k as u64, mode_offsets(shape).1 as u64];
        let n = kit::budget::elements(&dims, 4, "the dictionary matrices")? as usize;
        let mats = r.f32s(n)?;
        let ensemble = Ensemble { shape, k, mats };
        ensemble.validate().map_err(|e| r.error(e))?;
        Ok(ensemble)
    }

    /// The `.lfd` bytes (see docs/formats.md). Refuses an ensemble the reader would refuse.
    pub fn to_lfd_bytes(&self) -> Result<Vec<u8>> {
        self.validate()?;
        let mut bytes = LFD_MAGIC.to_vec();
        bytes.extend_from_slice(&LFD_VERSION.to_le_bytes());
        self.write_body(&mut bytes);
        let sum = fnv1a64(&bytes);
        bytes.extend_from_slice(&sum.to_le_bytes());
        Ok(bytes)
    }

    /// Writes a `.lfd` file atomically.
    pub fn write(&self, path: &Path) -> Result<()> {
        Ok(kit::output::write_bytes(path, &self.to_lfd_bytes()?)?)
    }

    /// Reads and checks a `.lfd` file (a regular file within the memory budget).
    pub fn read(path: &Path) -> Result<Ensemble> {
        let bytes = kit::input::read_bounded(path, kit::budget::get())?;
        Ensemble::from_lfd_bytes(&bytes).map_err(|e| LfError::file(path, e))
    }

    /// Parses `.lfd` bytes.
    pub fn from_lfd_bytes(bytes: &[u8]) -> Result<Ensemble> {
        if bytes.len() < 16 || &bytes[..4] != LFD_MAGIC {
            return Err(LfError::corrupt("dictionary file", "not a .lfd file (bad magic or too short)"));
        }
        let (body, tail) = bytes.split_at(bytes.len() - 8);
        if fnv1a64(body) != u64::from_le_bytes(tail.try_into().unwrap()) {
            return Err(LfError::corrupt("dictionary file", "checksum mismatch (truncated or damaged)"));
        }
        let mut r = ByteReader::new(&body[4..], "dictionary file");
        let version = r.u32()?;
        if version != LFD_VERSION {
            return Err(r.error(format!("version {version}, this build reads {LFD_VERSION}")));
        }
        let ensemble = Ensemble::read_body(&mut r)?;
        r.finish()?;
        Ok(ensemble)
    }
}

/// In-place n-mode products of one patch with the five matrices of `dict`:
/// `analysis` computes coefficients (`x_n U_n^T`), otherwise samples (`x_n U_n`).
/// Each fiber is summed in index order in f32, the order the GPU kernels use too.
pub fn mode_products(data: &mut [f32], shape: PatchShape, dict: &[f32], analysis: bool) {
    mode_products_except(data, shape, dict, analysis, None);
}

/// [`mode_products`] over every mode but `skip` (training needs the product with all the
/// other modes of a dictionary).
///
/// The fibers of one mode that share an outer index lie side by side (`inner` runs over the
/// stride), so each output row is accumulated for all of them at once: the loop over
/// `inner` vectorises while every fiber still sums its terms in index order.
pub fn mode_products_except(data: &mut [f32], shape: PatchShape, dict: &[f32], analysis: bool, skip: Option<usize>) {
    let modes = shape.modes();
    let strides = shape.strides();
    let (offsets, _) = mode_offsets(shape);
    let mut block = vec![0f32; data.len()];
    let mut weights = [0f32; crate::patch::MAX_MODE * crate::patch::MAX_MODE];
    for n in (0..MODES).filter(|&n| Some(n) != skip) {
        let (m, s) = (modes[n], strides[n]);
        let u = &dict[offsets[n]..offsets[n] + m * m];
        // weights[i * m + t] multiplies input t for output i.
        for i in 0..m {
            for t in 0..m {
                weights[i * m + t] = if analysis { u[t * m + i] } else { u[i * m + t] };
            }
        }
        let span = m * s;
        let block = &mut block[..span];
        for chunk in data.chunks_exact_mut(span) {
            block.copy_from_slice(chunk);
            for i in 0..m {
                let out = &mut chunk[i * s..(i + 1) * s];
                out.fill(0.0);
                for t in 0..m {
                    let w = weights[i * m + t];
                    for (o, &x) in out.iter_mut().zip(&block[t * s..(t + 1) * s]) {
                        *o += w * x;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn the_dct_ensemble_is_orthonormal_and_its_first_atom_is_constant() {
        let shape = PatchShape { my: 5, mx: 8, mu: 9, mv: 1 };
        let e = Ensemble::dct(shape);
        e.validate().unwrap();
        // A constant patch has one coefficient, at location 0, of norm sqrt(P) times the value.
        let mut x = vec![0.5f32; shape.len()];
        mode_products(&mut x, shape, e.dictionary(0), true);
        assert!((x[0] - 0.5 * (shape.len() as f32).sqrt()).abs() < 1e-4, "{}", x[0]);
        assert!(x[1..].iter().all(|v| v.abs() < 1e-4));
    }

    #[test]
    fn analysis_then_synthesis_is_identity_and_keeps_the_norm() {
        let shape = PatchShape { my: 5, mx: 4, mu: 3, mv: 2 };
        let e = Ensemble::random(shape, 2, 9);
        e.validate().unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let t: Vec<f32> = (0..shape.len()).map(|_| rng.gen_range(0.0..1.0)).collect();
        let mut x = t.clone();
        mode_products(&mut x, shape, e.dictionary(1), true);
        let norm = |v: &[f32]| v.iter().map(|&a| a as f64 * a as f64).sum::<f64>();
        assert!((norm(&x) - norm(&t)).abs() < 1e-4 * norm(&t));
        mode_products(&mut x, shape, e.dictionary(1), false);
        let worst = x.iter().zip(&t).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(worst < 1e-5, "round trip error {worst}");
    }

    #[test]
    fn lfd_round_trip_and_corruption() {
        let shape = PatchShape { my: 2, mx: 3, mu: 2, mv: 1 };
        let e = Ensemble::random(shape, 3, 4);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.lfd");
        e.write(&p).unwrap();
        assert_eq!(Ensemble::read(&p).unwrap(), e);
        let bytes = std::fs::read(&p).unwrap();
        assert!(Ensemble::from_lfd_bytes(&bytes[..bytes.len() - 5]).is_err());
        let mut flipped = bytes.clone();
        flipped[30] ^= 0x40;
        assert!(Ensemble::from_lfd_bytes(&flipped).is_err());
        // A non-orthonormal matrix with a valid checksum is refused too.
        let mut bad = e.clone();
        bad.mats[0] = 3.0;
        assert!(bad.write(&p).is_err(), "the writer refuses what the reader refuses");
        let mut bytes = LFD_MAGIC.to_vec();
        bytes.extend_from_slice(&LFD_VERSION.to_le_bytes());
        bad.write_body(&mut bytes);
        let sum = fnv1a64(&bytes);
        bytes.extend_from_slice(&sum.to_le_bytes());
        std::fs::write(&p, &bytes).unwrap();
        let err = Ensemble::read(&p).unwrap_err().to_string();
        assert!(err.contains("orthonormal"), "{err}");
    }
}
