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
/// zstd's multithreaded job size (see `Compressed::assemble`).
const ZSTD_JOB_BYTES: u32 = 2 << 20;

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
    /// Offset of `bytes` in the whole input, for error messages.
    base: usize,
}

impl<'a> ByteReader<'a> {
    pub fn new(bytes: &'a [u8], what: &'static str) -> Self {
        ByteReader { bytes, pos: 0, what, base: 0 }
    }

    /// The bytes not read yet, as a reader of their own (positions still counted from the
    /// start of the input).
    pub fn rest(&self) -> ByteReader<'a> {
        ByteReader { bytes: &self.bytes[self.pos..], pos: 0, what: self.what, base: self.base + self.pos }
    }

    /// Bytes `range` of this reader's, as a reader of their own.
    fn sub(&self, range: std::ops::Range<usize>) -> ByteReader<'a> {
        ByteReader { bytes: &self.bytes[range.clone()], pos: 0, what: self.what, base: self.base + range.start }
    }

    pub fn error(&self, message: impl std::fmt::Display) -> LfError {
        LfError::corrupt(self.what, format!("at byte {}: {message}", self.base + self.pos))
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

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
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

/// The payload's four per-patch streams (memberships, coefficient counts, locations delta
/// coded, levels zigzagged; LEB128 varints), appended a run of patches at a time in patch
/// order: the same bytes however the patches are split.
#[derive(Clone, Debug, Default)]
pub struct Streams {
    membership: Vec<u8>,
    counts: Vec<u8>,
    locations: Vec<u8>,
    levels: Vec<u8>,
    patches: usize,
    coefficients: usize,
}

impl Streams {
    /// Appends patches `range` of `codes` (the patches that follow those pushed before).
    pub fn push(&mut self, codes: &Codes, range: std::ops::Range<usize>) {
        for p in range.clone() {
            put_varint(&mut self.membership, codes.membership[p] as u64);
            put_varint(&mut self.counts, codes.count(p) as u64);
            let mut prev = None;
            for &loc in &codes.locations[codes.offsets[p]..codes.offsets[p + 1]] {
                put_varint(&mut self.locations, prev.map_or(loc, |q: u32| loc - q - 1) as u64);
                prev = Some(loc);
            }
        }
        let (c0, c1) = (codes.offsets[range.start], codes.offsets[range.end]);
        for &l in &codes.levels[c0..c1] {
            put_varint(&mut self.levels, zigzag(l));
        }
        self.patches += range.len();
        self.coefficients += c1 - c0;
    }

    /// Bytes of the four streams.
    pub fn len(&self) -> usize {
        self.membership.len() + self.counts.len() + self.locations.len() + self.levels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
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
    /// statistics and are not stored. Refuses what the reader would refuse (parameters out
    /// of range, sizes beyond 32 bits), so no file is written that cannot be read back.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let codes = &self.codes;
        let size = self.checked_size()?;
        let mut streams = Streams::default();
        streams.push(codes, 0..codes.len());
        self.assemble(size, &streams)
    }

    /// The `.lfc` bytes of `self` whose codes were already serialised, chunk by chunk in
    /// patch order, into `streams` (the encoder does this while the GPU works).
    pub fn to_bytes_from(&self, streams: &Streams) -> Result<Vec<u8>> {
        let size = self.checked_size()?;
        self.assemble(size, streams)
    }

    /// Checks what the reader checks of the parameters; returns the size in 32 bits.
    fn checked_size(&self) -> Result<[u32; 4]> {
        self.params.check(self.ensemble.shape.len())?;
        if self.step != self.params.base_step() {
            return Err(LfError::Invalid(format!("quantisation step {} is not epsilon's", self.step)));
        }
        let mut size = [0u32; 4];
        for (s, &d) in size.iter_mut().zip(&self.size) {
            *s = u32::try_from(d)
                .map_err(|_| LfError::Invalid(format!("light-field size {:?} beyond 32 bits", self.size)))?;
        }
        Ok(size)
    }

    fn assemble(&self, size: [u32; 4], streams: &Streams) -> Result<Vec<u8>> {
        let codes = &self.codes;
        if streams.patches != codes.len() || streams.coefficients != codes.locations.len() {
            return Err(LfError::Invalid(format!(
                "serialised {} patches and {} coefficients of {} and {}",
                streams.patches,
                streams.coefficients,
                codes.len(),
                codes.locations.len()
            )));
        }
        let mut payload = Vec::with_capacity(streams.len() + self.ensemble.mats.len() * 4 + 64);
        self.ensemble.write_body(&mut payload);
        for s in [&streams.membership, &streams.counts, &streams.locations, &streams.levels] {
            payload.extend_from_slice(s);
        }
        self.file(size, &payload)
    }

    /// The file of `payload`: the header (sized after `self`'s codes), then the zstd frame.
    fn file(&self, size: [u32; 4], payload: &[u8]) -> Result<Vec<u8>> {
        let codes = &self.codes;
        if payload.len() as u64 > MAX_PAYLOAD {
            return Err(LfError::Invalid(format!(
                "payload of {} bytes is beyond the {MAX_PAYLOAD}-byte limit",
                payload.len()
            )));
        }
        let mut encoder = zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(|e| LfError::Invalid(e.to_string()))?;
        encoder.include_checksum(true).map_err(|e| LfError::Invalid(e.to_string()))?;
        // zstd at level 9 on one thread took ~0.9 s for the paper's light field, four times
        // the GPU encode. zstd documents its multithreaded output as independent of the
        // worker count (for one or more workers), so files stay deterministic.
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(16)) as u32;
        encoder.multithread(workers).map_err(|e| LfError::Invalid(e.to_string()))?;
        // Level 9's own job size (16 MiB) cut the paper's ~60 MB payload into 4 jobs, so 4
        // of the 16 workers did all of it; 2 MiB jobs keep every worker busy. Measured: a
        // 6.2 MB payload of real codes (400x400 x 8x8 views) grew 0.11%, 59 MB of synthetic
        // codes shrank 0.17%. Payloads under 2 MiB are one job, byte for byte as before.
        encoder
            .set_parameter(zstd::stream::raw::CParameter::JobSize(ZSTD_JOB_BYTES))
            .map_err(|e| LfError::Invalid(e.to_string()))?;
        let frame = encoder.compress(payload).map_err(|e| LfError::Invalid(format!("zstd: {e}")))?;

        let mut out = Vec::with_capacity(HEADER_LEN + frame.len());
        out.extend_from_slice(LFC_MAGIC);
        out.extend_from_slice(&LFC_VERSION.to_le_bytes());
        for s in size {
            out.extend_from_slice(&s.to_le_bytes());
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

    /// Parses and checks `.lfc` bytes: the header (hash, sizes against the bytes present
    /// and the memory budget, parameters), the zstd frame (one frame, with its content
    /// size and checksum), and every index and level against its range; see
    /// docs/formats.md. A file this accepts decodes to finite samples.
    pub fn from_bytes(bytes: &[u8]) -> Result<Compressed> {
        let header = Header::parse(bytes)?;
        let frame = &bytes[HEADER_LEN..];
        check_frame(frame, header.payload_len)?;
        // Within the budget (Header::parse), so this allocation is bounded.
        let payload = zstd::bulk::decompress(frame, header.payload_len as usize)
            .map_err(|e| LfError::corrupt("light-field bitstream", format!("zstd: {e}")))?;
        if payload.len() as u64 != header.payload_len {
            return Err(LfError::corrupt("light-field bitstream", "payload shorter than the header says"));
        }
        let mut r = ByteReader::new(&payload, "light-field bitstream payload");
        let ensemble = Ensemble::read_body(&mut r)?;
        let plen = ensemble.shape.len();
        let params = Params { sparsity: header.sparsity as usize, epsilon: header.epsilon };
        params.check(plen).map_err(|e| r.error(e))?;
        if header.step != params.base_step() {
            return Err(r.error(format!("quantisation step {:e} is not epsilon ({:e})", header.step, header.epsilon)));
        }
        let [u, v, h, w] = header.size;
        let grid = PatchGrid::new(ensemble.shape, u, v, h, w);
        let n = grid.len();
        if header.patches != n as u64 {
            return Err(r.error(format!("header says {} patches, the size and patch shape give {n}", header.patches)));
        }
        // Every patch needs at least two payload bytes (membership and count): a header
        // whose size claims more patches than that is refused before anything is sized by n.
        if n as u64 > header.payload_len / 2 {
            return Err(r.error(format!("{n} patches cannot fit a payload of {} bytes", header.payload_len)));
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
        if total > r.remaining() {
            return Err(r.error(format!("{total} coefficients cannot fit the {} bytes left", r.remaining())));
        }
        let (locations, levels) = parse_coefficients(&r, &codes.offsets, &grid, header.step)?;
        codes.locations = locations;
        codes.levels = levels;
        codes.success = vec![true; n];
        codes.errors = vec![0.0; n];
        Ok(Compressed { size: header.size, params, step: header.step, ensemble, codes })
    }

    /// Writes the `.lfc` file atomically; returns its length.
    pub fn write(&self, path: &Path) -> Result<u64> {
        let bytes = self.to_bytes()?;
        kit::output::write_bytes(path, &bytes)?;
        Ok(bytes.len() as u64)
    }

    /// Reads and checks a `.lfc` file (a regular file within the memory budget).
    pub fn read(path: &Path) -> Result<Compressed> {
        let bytes = kit::input::read_bounded(path, kit::budget::get())?;
        Compressed::from_bytes(&bytes).map_err(|e| LfError::file(path, e))
    }
}

/// Bytes of the varint streams scanned per parallel task when looking for varint ends.
const SCAN_BLOCK: usize = 1 << 20;

/// Parses the location and level streams (the rest of `r`, `offsets` coefficients per
/// patch each, and nothing after them), checking every value as a serial read would and
/// refusing exactly the inputs it refuses. Parallel over runs of patches: a varint ends at
/// a byte below 0x80, so counting those bytes (in parallel) finds where each run's varints
/// start without decoding the ones before.
fn parse_coefficients(r: &ByteReader, offsets: &[usize], grid: &PatchGrid, step: f32) -> Result<(Vec<u32>, Vec<i32>)> {
    use rayon::prelude::*;
    let rest = r.rest();
    let bytes = rest.bytes;
    let n = offsets.len() - 1;
    let total = offsets[n];
    let plen = grid.shape.len();
    let ends: Vec<usize> = bytes.par_chunks(SCAN_BLOCK).map(|b| b.iter().filter(|&&x| x < 0x80).count()).collect();
    let before: Vec<usize> = ends
        .iter()
        .scan(0, |sum, &e| {
            let s = *sum;
            *sum += e;
            Some(s)
        })
        .collect();
    // The byte just past the k-th varint (None when there are fewer).
    let after = |k: usize| -> Option<usize> {
        if k == 0 {
            return Some(0);
        }
        let block = before.partition_point(|&b| b < k).checked_sub(1)?;
        let mut left = k - before[block];
        if left > ends[block] {
            return None;
        }
        let start = block * SCAN_BLOCK;
        bytes[start..]
            .iter()
            .position(|&x| {
                left -= (x < 0x80) as usize;
                left == 0
            })
            .map(|i| start + i + 1)
    };
    let pieces = (rayon::current_num_threads() * 4).clamp(1, n.max(1));
    let firsts: Vec<usize> = (0..=pieces).map(|j| j * n / pieces).collect();
    let mut locations = vec![0u32; total];
    let mut levels = vec![0i32; total];
    let split = |j: usize, base: usize| -> Result<ByteReader> {
        let at = |p: usize| {
            after(base + offsets[p]).ok_or_else(|| rest.error(format!("truncated: fewer than {} varints", 2 * total)))
        };
        Ok(rest.sub(at(firsts[j])?..at(firsts[j + 1])?))
    };
    let mut loc_out: Vec<&mut [u32]> = Vec::with_capacity(pieces);
    let mut lev_out: Vec<&mut [i32]> = Vec::with_capacity(pieces);
    let (mut l, mut v) = (locations.as_mut_slice(), levels.as_mut_slice());
    for j in 0..pieces {
        let len = offsets[firsts[j + 1]] - offsets[firsts[j]];
        let (a, b) = std::mem::take(&mut l).split_at_mut(len);
        let (c, d) = std::mem::take(&mut v).split_at_mut(len);
        loc_out.push(a);
        lev_out.push(c);
        (l, v) = (b, d);
    }
    loc_out.into_par_iter().zip(lev_out).enumerate().try_for_each(|(j, (locs, levs))| -> Result<()> {
        let mut r = split(j, 0)?;
        let mut out = locs.iter_mut();
        for p in firsts[j]..firsts[j + 1] {
            let mut prev: Option<u64> = None;
            for _ in offsets[p]..offsets[p + 1] {
                let d = r.varint()?;
                let loc = prev.map_or(Some(d), |q| q.checked_add(d).and_then(|x| x.checked_add(1)));
                let loc = loc
                    .filter(|&l| l < plen as u64)
                    .ok_or_else(|| r.error(format!("coefficient location past the patch ({plen} samples)")))?;
                *out.next().expect("sized by offsets") = loc as u32;
                prev = Some(loc);
            }
        }
        r.finish()?;
        let mut r = split(j, total)?;
        let mut out = levs.iter_mut();
        for p in firsts[j]..firsts[j + 1] {
            let bound = max_level(step, grid.valid_samples(p), plen);
            for _ in offsets[p]..offsets[p + 1] {
                let z = r.varint()?;
                if z > u32::MAX as u64 || unzigzag(z).unsigned_abs() as u64 > bound {
                    return Err(r.error(format!(
                        "coefficient level of patch {p} beyond {bound}, more than a patch of values in [0, 1] holds"
                    )));
                }
                *out.next().expect("sized by offsets") = unzigzag(z);
            }
        }
        r.finish()
    })?;
    let end = after(2 * total).ok_or_else(|| rest.error(format!("truncated: fewer than {} varints", 2 * total)))?;
    if end != bytes.len() {
        return Err(rest.sub(end..bytes.len()).error(format!("{} unexpected trailing bytes", bytes.len() - end)));
    }
    Ok((locations, levels))
}

/// The largest level magnitude a patch with `valid` of its `plen` samples can hold at base
/// step `step`: its coefficients have the norm of its samples (orthonormal dictionaries),
/// at most sqrt(plen) for values in [0, 1]. Twice that, plus rounding, leaves the f32
/// rounding of the encoder's products far behind, and keeps every decoded value finite.
fn max_level(step: f32, valid: usize, plen: usize) -> u64 {
    let step = crate::encoder::patch_step(step, valid, plen) as f64;
    (2.0 * (plen as f64).sqrt() / step).ceil() as u64 + 2
}

/// zstd's frame magic number, little-endian.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// The most a zstd frame can expand: an RLE block of 4 bytes (3 of header) holds 128 KiB.
const ZSTD_MAX_RATIO: u64 = 32768;

/// The frame must be exactly one zstd frame (no skippable or further frames, no trailing
/// bytes), with a content checksum (zstd verifies it while decoding; the decoder accepts a
/// frame without one, so the flag is checked here), no dictionary, and a declared content
/// size equal to the header's payload length.
fn check_frame(frame: &[u8], payload_len: u64) -> Result<()> {
    let bad = |m: String| LfError::corrupt("light-field bitstream", m);
    if frame.len() < 6 || frame[..4] != ZSTD_MAGIC {
        return Err(bad("the payload is not one zstd frame (bad magic; skippable frames are not read)".into()));
    }
    let descriptor = frame[4];
    if descriptor & 0x04 == 0 {
        return Err(bad("the zstd frame carries no content checksum".into()));
    }
    if descriptor & 0x03 != 0 {
        return Err(bad("the zstd frame needs a dictionary".into()));
    }
    match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(n)) if n == payload_len => {}
        Ok(Some(n)) => return Err(bad(format!("the zstd frame holds {n} bytes, the header says {payload_len}"))),
        Ok(None) => return Err(bad("the zstd frame declares no content size".into())),
        Err(_) => return Err(bad("the zstd frame header is damaged".into())),
    }
    match zstd::zstd_safe::find_frame_compressed_size(frame) {
        Ok(n) if n == frame.len() => Ok(()),
        Ok(n) => Err(bad(format!("{} bytes follow the zstd frame", frame.len() - n))),
        Err(_) => Err(bad("the zstd frame is damaged or cut short".into())),
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
/// allocate without bound); the memory budget may refuse less.
const MAX_PAYLOAD: u64 = 1 << 36;

impl Header {
    /// Parses the header and checks every declared size: against the bytes present, zstd's
    /// largest expansion, and the memory budget (the payload, and the decoded light field
    /// of U x V x H x W x 3 f32), in checked u64 arithmetic. `info` and `decode` share it.
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
        let size: [u32; 4] = [r.u32()?, r.u32()?, r.u32()?, r.u32()?];
        let h = Header {
            size: size.map(|s| s as usize),
            sparsity: r.u32()?,
            epsilon: r.f32()?,
            step: r.f32()?,
            patches: r.u64()?,
            coefficients: r.u64()?,
            payload_len: r.u64()?,
            frame_len: r.u64()?,
        };
        if size.contains(&0) {
            return Err(r.error(format!("light-field size {size:?} is empty")));
        }
        if !(h.epsilon.is_finite() && h.epsilon > 0.0 && h.step.is_finite() && h.step > 0.0) {
            return Err(r.error("epsilon or quantisation step is not a positive number"));
        }
        let present = (bytes.len() - HEADER_LEN) as u64;
        if h.frame_len != present {
            return Err(
                r.error(format!("zstd frame of {} bytes declared, {present} present (truncated?)", h.frame_len))
            );
        }
        if h.payload_len > MAX_PAYLOAD || h.payload_len > present.saturating_mul(ZSTD_MAX_RATIO) {
            return Err(r.error(format!(
                "a payload of {} bytes cannot come from a {present}-byte zstd frame (or is beyond {MAX_PAYLOAD})",
                h.payload_len
            )));
        }
        kit::budget::check(h.payload_len, "the .lfc payload")?;
        let dims = [size[0] as u64, size[1] as u64, size[2] as u64, size[3] as u64, crate::patch::COLOURS as u64];
        let what = format!("decoding {}x{} views of {}x{} pixels", size[0], size[1], size[3], size[2]);
        kit::budget::elements(&dims, 4, &what)?;
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

    /// The coefficient streams are parsed in parallel runs of patches: a file whose streams
    /// are cut, lengthened, or hold a bad value at a run's edge is refused like any other.
    #[test]
    fn coefficients_parse_across_runs_and_bad_streams_are_refused() {
        let lf = crate::synth::generate((4, 4), (40, 30), 3);
        let ens = Ensemble::random(crate::patch::PatchShape { my: 5, mx: 5, mu: 4, mv: 4 }, 2, 1);
        let params = Params { sparsity: 300, epsilon: 0.02 };
        let (c, _) = crate::codec::encode_lightfield(&lf, &ens, params, crate::codec::CodecPath::Cpu).unwrap();
        let n = c.codes.len();
        // Four threads: 16 runs of 3 patches each, whatever the machine.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        assert_eq!(n, 48);
        let size = c.checked_size().unwrap();
        let mut streams = Streams::default();
        streams.push(&c.codes, 0..n);
        let mut head = Vec::new();
        c.ensemble.write_body(&mut head);
        head.extend_from_slice(&streams.membership);
        head.extend_from_slice(&streams.counts);
        let with = |locations: &[u8], levels: &[u8]| {
            let payload = [&head[..], locations, levels].concat();
            pool.install(|| Compressed::from_bytes(&c.file(size, &payload).unwrap()))
        };
        let (locs, levs) = (&streams.locations[..], &streams.levels[..]);
        let back = with(locs, levs).unwrap();
        assert_eq!((back.codes.locations, back.codes.levels), (c.codes.locations.clone(), c.codes.levels.clone()));
        // A varint missing, one too many, one that never ends, and a location past the
        // patch and a level too large at a run's edge.
        assert!(with(locs, &levs[..levs.len() - 1]).is_err());
        assert!(with(locs, &[levs, &[0]].concat()).is_err());
        assert!(with(locs, &[levs, &[0x80; 11]].concat()).is_err());
        let mid = c.codes.offsets[n / 2];
        let at = |stream: &[u8], k: usize| stream.iter().enumerate().filter(|(_, &b)| b < 0x80).nth(k).unwrap().0;
        let mut bad = locs.to_vec();
        bad[at(locs, mid)] = 0x7f;
        bad.splice(at(locs, mid)..at(locs, mid), [0xff, 0xff]);
        assert!(with(&bad, levs).is_err());
        let mut bad = levs.to_vec();
        bad.splice(at(levs, mid)..at(levs, mid), [0xff, 0xff, 0xff]);
        assert!(with(locs, &bad).is_err());
    }
}
