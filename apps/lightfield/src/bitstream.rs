//! The `.lfc` bitstream: a fixed header, then one zstd frame (with its content checksum)
//! holding the dictionary ensemble and every patch's membership, coefficient count,
//! coefficient locations (delta coded) and quantised levels (zigzag), as LEB128 varints in
//! separate streams so zstd sees similar symbols together. docs/formats.md has the layout.
//! Also the small byte-reading helpers the `.lfd` reader shares.

use std::path::Path;

use crate::dictionary::Ensemble;
use crate::encoder::{Codes, Params};
use crate::error::{LfError, Result};
use crate::patch::PatchGrid;

pub const LFC_MAGIC: &[u8; 4] = b"TLFC";
pub const LFC_VERSION: u32 = 1;
/// Header bytes before the zstd frame.
pub const HEADER_LEN: usize = 76;
const ZSTD_LEVEL: i32 = 9;

/// FNV-1a, 64 bit: the `.lfd` checksum.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Reads little-endian values and varints with bounds checks; every failure names the file
/// kind and the byte offset.
pub struct ByteReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> ByteReader<'a> {
    pub fn new(bytes: &'a [u8], what: &'static str) -> Self {
        ByteReader { bytes, pos: 0, what }
    }

    pub fn error(&self, message: impl std::fmt::Display) -> LfError {
        LfError::corrupt(self.what, format!("at byte {}: {message}", self.pos))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.bytes.len() - self.pos < n {
            return Err(self.error(format!("truncated (needs {n} more bytes, {} left)", self.bytes.len() - self.pos)));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }

    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }

    pub fn f32(&mut self) -> Result<f32> {
        Ok(f32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }

    pub fn f32s(&mut self, n: usize) -> Result<Vec<f32>> {
        let bytes = self.take(n.checked_mul(4).ok_or_else(|| self.error("size overflow"))?)?;
        Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect())
    }

    /// An unsigned LEB128 varint of at most 64 bits.
    pub fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.take(1)?[0];
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.error("varint longer than 64 bits"))
    }

    /// Fails unless every byte was read.
    pub fn finish(&self) -> Result<()> {
        if self.pos != self.bytes.len() {
            return Err(self.error(format!("{} unexpected trailing bytes", self.bytes.len() - self.pos)));
        }
        Ok(())
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i32) -> u64 {
    ((v << 1) ^ (v >> 31)) as u32 as u64
}

fn unzigzag(v: u64) -> i32 {
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

/// Everything a `.lfc` file holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Compressed {
    /// Light-field size (U, V, H, W).
    pub size: [usize; 4],
    pub params: Params,
    pub step: f32,
    pub ensemble: Ensemble,
    pub codes: Codes,
}

impl Compressed {
    pub fn grid(&self) -> PatchGrid {
        let [u, v, h, w] = self.size;
        PatchGrid::new(self.ensemble.shape, u, v, h, w)
    }

    /// Serialises to `.lfc` bytes. Per-patch success flags and errors are encoder
    /// statistics and are not stored.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let codes = &self.codes;
        let mut payload = Vec::new();
        self.ensemble.write_body(&mut payload);
        for &m in &codes.membership {
            put_varint(&mut payload, m as u64);
        }
        for p in 0..codes.len() {
            put_varint(&mut payload, codes.count(p) as u64);
        }
        for p in 0..codes.len() {
            let mut prev = None;
            for &loc in &codes.locations[codes.offsets[p]..codes.offsets[p + 1]] {
                put_varint(&mut payload, prev.map_or(loc, |q: u32| loc - q - 1) as u64);
                prev = Some(loc);
            }
        }
        for &l in &codes.levels {
            put_varint(&mut payload, zigzag(l));
        }
        let mut encoder = zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(|e| LfError::Invalid(e.to_string()))?;
        encoder.include_checksum(true).map_err(|e| LfError::Invalid(e.to_string()))?;
        // zstd at level 9 on one thread took ~0.9 s for the paper's light field, four times
        // the GPU encode. zstd documents its multithreaded output as independent of the
        // worker count (for one or more workers), so files stay deterministic.
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(16)) as u32;
        encoder.multithread(workers).map_err(|e| LfError::Invalid(e.to_string()))?;
        let frame = encoder.compress(&payload).map_err(|e| LfError::Invalid(format!("zstd: {e}")))?;

        let mut out = Vec::with_capacity(HEADER_LEN + frame.len());
        out.extend_from_slice(LFC_MAGIC);
        out.extend_from_slice(&LFC_VERSION.to_le_bytes());
        for s in self.size {
            out.extend_from_slice(&(s as u32).to_le_bytes());
        }
        out.extend_from_slice(&(self.params.sparsity as u32).to_le_bytes());
        out.extend_from_slice(&self.params.epsilon.to_le_bytes());
        out.extend_from_slice(&self.step.to_le_bytes());
        out.extend_from_slice(&(codes.len() as u64).to_le_bytes());
        out.extend_from_slice(&(codes.locations.len() as u64).to_le_bytes());
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&(frame.len() as u64).to_le_bytes());
        out.extend_from_slice(&fnv1a64(&out).to_le_bytes());
        debug_assert_eq!(out.len(), HEADER_LEN);
        out.extend_from_slice(&frame);
        Ok(out)
    }

    /// Parses and checks `.lfc` bytes: header checksum, sizes against limits, the zstd
    /// frame's checksum, and every index against its range.
    pub fn from_bytes(bytes: &[u8]) -> Result<Compressed> {
        let header = Header::parse(bytes)?;
        let frame = &bytes[HEADER_LEN..];
        if frame.len() as u64 != header.frame_len {
            return Err(LfError::corrupt(
                "light-field bitstream",
                format!("zstd frame is {} bytes, header says {} (truncated?)", frame.len(), header.frame_len),
            ));
        }
        let payload = zstd::bulk::decompress(frame, header.payload_len as usize)
            .map_err(|e| LfError::corrupt("light-field bitstream", format!("zstd: {e}")))?;
        if payload.len() as u64 != header.payload_len {
            return Err(LfError::corrupt("light-field bitstream", "payload shorter than the header says"));
        }
        let mut r = ByteReader::new(&payload, "light-field bitstream payload");
        let ensemble = Ensemble::read_body(&mut r)?;
        let [u, v, h, w] = header.size;
        let grid = PatchGrid::new(ensemble.shape, u, v, h, w);
        let n = grid.len();
        if header.patches != n as u64 {
            return Err(r.error(format!("header says {} patches, the size and patch shape give {n}", header.patches)));
        }
        let plen = ensemble.shape.len();
        if header.sparsity == 0 || header.sparsity as usize > plen {
            return Err(r.error(format!("sparsity {} outside 1..={plen}", header.sparsity)));
        }
        let mut codes = Codes { offsets: vec![0], ..Default::default() };
        for _ in 0..n {
            let m = r.varint()?;
            if m >= ensemble.k as u64 {
                return Err(r.error(format!("membership {m} but only {} dictionaries", ensemble.k)));
            }
            codes.membership.push(m as u32);
        }
        for _ in 0..n {
            let c = r.varint()?;
            if c > header.sparsity as u64 {
                return Err(r.error(format!("patch with {c} coefficients, sparsity is {}", header.sparsity)));
            }
            codes.offsets.push(codes.offsets.last().unwrap() + c as usize);
        }
        let total = *codes.offsets.last().unwrap();
        if total as u64 != header.coefficients {
            return Err(r.error(format!("{total} coefficients, header says {}", header.coefficients)));
        }
        codes.locations.reserve(total);
        for p in 0..n {
            let mut prev: Option<u64> = None;
            for _ in codes.offsets[p]..codes.offsets[p + 1] {
                let d = r.varint()?;
                let loc = prev.map_or(Some(d), |q| q.checked_add(d + 1)).filter(|&l| l < plen as u64);
                let loc =
                    loc.ok_or_else(|| r.error(format!("coefficient location past the patch ({plen} samples)")))?;
                codes.locations.push(loc as u32);
                prev = Some(loc);
            }
        }
        codes.levels.reserve(total);
        for _ in 0..total {
            let z = r.varint()?;
            if z > u32::MAX as u64 {
                return Err(r.error("coefficient level out of range"));
            }
            codes.levels.push(unzigzag(z));
        }
        r.finish()?;
        codes.success = vec![true; n];
        codes.errors = vec![0.0; n];
        let params = Params { sparsity: header.sparsity as usize, epsilon: header.epsilon };
        Ok(Compressed { size: header.size, params, step: header.step, ensemble, codes })
    }

    /// Writes the `.lfc` file atomically.
    pub fn write(&self, path: &Path) -> Result<u64> {
        let bytes = self.to_bytes()?;
        engine::io::write_atomic(path, |w| {
            use std::io::Write;
            w.write_all(&bytes).map_err(|e| engine::EngineError::File { path: path.into(), message: e.to_string() })
        })?;
        Ok(bytes.len() as u64)
    }

    pub fn read(path: &Path) -> Result<Compressed> {
        let bytes = std::fs::read(path).map_err(|e| LfError::file(path, e))?;
        Compressed::from_bytes(&bytes).map_err(|e| LfError::file(path, e))
    }
}

/// The fixed `.lfc` header.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    pub size: [usize; 4],
    pub sparsity: u32,
    pub epsilon: f32,
    pub step: f32,
    pub patches: u64,
    pub coefficients: u64,
    pub payload_len: u64,
    pub frame_len: u64,
}

/// Largest decompressed payload a reader accepts (a corrupt length must not make it
/// allocate without bound).
const MAX_PAYLOAD: u64 = 1 << 36;

impl Header {
    pub fn parse(bytes: &[u8]) -> Result<Header> {
        if bytes.len() < HEADER_LEN || &bytes[..4] != LFC_MAGIC {
            return Err(LfError::corrupt("light-field bitstream", "not a .lfc file (bad magic or too short)"));
        }
        if fnv1a64(&bytes[..HEADER_LEN - 8])
            != u64::from_le_bytes(bytes[HEADER_LEN - 8..HEADER_LEN].try_into().unwrap())
        {
            return Err(LfError::corrupt("light-field bitstream", "header checksum mismatch"));
        }
        let mut r = ByteReader::new(&bytes[4..HEADER_LEN - 8], "light-field bitstream header");
        let version = r.u32()?;
        if version != LFC_VERSION {
            return Err(r.error(format!("version {version}, this build reads {LFC_VERSION}")));
        }
        let size: [usize; 4] = [r.u32()? as usize, r.u32()? as usize, r.u32()? as usize, r.u32()? as usize];
        let h = Header {
            size,
            sparsity: r.u32()?,
            epsilon: r.f32()?,
            step: r.f32()?,
            patches: r.u64()?,
            coefficients: r.u64()?,
            payload_len: r.u64()?,
            frame_len: r.u64()?,
        };
        if size.contains(&0) || size.iter().map(|&s| s as u64).product::<u64>() > 1 << 40 {
            return Err(r.error(format!("light-field size {size:?} is empty or too large")));
        }
        if !(h.epsilon.is_finite() && h.epsilon > 0.0 && h.step.is_finite() && h.step > 0.0) {
            return Err(r.error("epsilon or quantisation step is not a positive number"));
        }
        if h.payload_len > MAX_PAYLOAD {
            return Err(r.error(format!("payload of {} bytes is beyond the {MAX_PAYLOAD}-byte limit", h.payload_len)));
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_zigzag_round_trip() {
        let mut out = Vec::new();
        let values = [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX];
        values.iter().for_each(|&v| put_varint(&mut out, v));
        let mut r = ByteReader::new(&out, "test");
        for &v in &values {
            assert_eq!(r.varint().unwrap(), v);
        }
        r.finish().unwrap();
        for v in [0, 1, -1, 12345, -98765, i32::MAX, i32::MIN] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert!(ByteReader::new(&[0x80, 0x80], "test").varint().is_err());
    }
}
