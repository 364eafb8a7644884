//! Version 3 of the `.lfc` layout: a fixed header, a section table, then independent
//! frames: the ensemble first (one zstd frame), then one per run of `section_patches`
//! patches (the last run may be short), each the range coder's bytes of its patches'
//! codes under adaptive models ([`crate::entropy`]). Each frame has its size and a checksum
//! in the table, so the encoder codes a section on the CPU while the GPU encodes the next
//! ones, and the decoder decodes sections in parallel and uploads each as soon as it is
//! decoded. docs/formats.md has the byte layout and every check the reader makes.

use std::ops::Range;

use crate::bytes::{fnv1a64, ByteReader, LFC_MAGIC};
use crate::codes::Codes;
use crate::dictionary::Ensemble;
use crate::entropy::{Limits, PatchBuf, PatchRef, SectionModels};
use crate::error::{LfError, Result};
use crate::patch::PatchGrid;

pub const LFC_VERSION: u32 = 3;
/// Header bytes before the section table.
pub const HEADER_LEN: usize = 72;
/// Bytes of one section-table entry.
pub const ENTRY_LEN: usize = 32;
/// Patches per section the writer uses: the Table 1 light field (42,025 patches) has 42
/// sections, several per CPU thread of a 16-core host, and a GPU chunk of 4096 patches
/// yields four to code at once; and a section's adaptive models see enough patches to learn.
pub const SECTION_PATCHES: usize = 1024;
/// Most patches per section a reader accepts: keeps every section's coefficient count
/// (at most sparsity x patches, sparsity <= 16^4 x 3) within 32 bits.
pub const MAX_SECTION_PATCHES: usize = 1 << 14;
/// zstd level of the ensemble's frame.
const ZSTD_LEVEL: i32 = 4;
/// Largest payload a reader accepts in all (a corrupt length must not make it allocate
/// without bound); the memory budget may refuse less.
const MAX_PAYLOAD: u64 = 1 << 36;
/// The most a zstd frame can expand: an RLE block of 4 bytes (3 of header) holds 128 KiB.
const ZSTD_MAX_RATIO: u64 = 32768;

const WHAT: &str = "light-field bitstream";

/// A 64-bit checksum of a frame, eight bytes per step (FNV-1a's byte loop was the slowest
/// part of checking a 40 MB file): multiply-xor-rotate over little-endian words, the tail
/// zero-padded, the length mixed in last.
pub fn hash64(bytes: &[u8]) -> u64 {
    let mix = |h: u64, w: u64| (h ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    let mut words = bytes.chunks_exact(8);
    let mut h = words.by_ref().fold(0xcbf2_9ce4_8422_2325u64, |h, w| mix(h, u64::from_le_bytes(w.try_into().unwrap())));
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    h = mix(h, u64::from_le_bytes(tail));
    mix(h, bytes.len() as u64)
}

/// One section-table entry.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Entry {
    /// Coefficients in the section (0 for the ensemble).
    pub coefficients: u64,
    /// Bytes once decompressed (the ensemble); a section's equals its frame's.
    pub payload_len: u64,
    /// Bytes of the frame in the file.
    pub frame_len: u64,
    /// [`hash64`] of the frame.
    pub checksum: u64,
}

/// One compressed section (or the ensemble) with its table entry.
pub struct Frame {
    pub entry: Entry,
    pub bytes: Vec<u8>,
}

thread_local! {
    static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> = const { std::cell::RefCell::new(None) };
}

/// Compresses the ensemble's payload into a frame with zstd's content checksum, on this
/// thread (one compressor kept per thread; the output does not depend on which thread).
fn compress(payload: &[u8]) -> Result<Frame> {
    let zstd_error = |e: std::io::Error| LfError::Invalid(format!("zstd: {e}"));
    let bytes = COMPRESSOR.with(|cell| -> Result<Vec<u8>> {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            let mut c = zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(zstd_error)?;
            c.include_checksum(true).map_err(zstd_error)?;
            *cell = Some(c);
        }
        cell.as_mut().expect("made above").compress(payload).map_err(zstd_error)
    })?;
    let entry = Entry {
        coefficients: 0,
        payload_len: payload.len() as u64,
        frame_len: bytes.len() as u64,
        checksum: hash64(&bytes),
    };
    Ok(Frame { entry, bytes })
}

/// The frame of the ensemble.
pub fn ensemble_frame(ensemble: &Ensemble) -> Result<Frame> {
    let mut body = Vec::with_capacity(ensemble.mats.len() * 4 + 32);
    ensemble.write_body(&mut body);
    compress(&body)
}

/// The frame of patches `range` of `codes` (one section), range coded under `limits`.
pub fn section_frame(codes: &Codes, range: Range<usize>, limits: Limits) -> Result<Frame> {
    let coder_error = |e: kit::entropy::EntropyError| LfError::Invalid(format!("section coder: {e}"));
    let mut models = SectionModels::new(limits);
    let mut coder = kit::entropy::Encoder::new();
    let mut out = PatchBuf::default();
    for p in range.clone() {
        let c = codes.offsets[p]..codes.offsets[p + 1];
        let truth = PatchRef {
            membership: codes.membership[p],
            locations: &codes.locations[c.clone()],
            levels: &codes.levels[c],
        };
        models.patch(&mut coder, truth, u32::MAX as u64, &mut out).map_err(coder_error)?;
    }
    let bytes = coder.finish().map_err(coder_error)?;
    let coefficients = (codes.offsets[range.end] - codes.offsets[range.start]) as u64;
    let len = bytes.len() as u64;
    Ok(Frame { entry: Entry { coefficients, payload_len: len, frame_len: len, checksum: hash64(&bytes) }, bytes })
}

/// The header words the writer fills in.
#[derive(Clone, Copy, Debug)]
pub struct Fields {
    pub size: [u32; 4],
    pub sparsity: u32,
    pub epsilon: f32,
    pub step: f32,
    pub patches: u64,
    pub coefficients: u64,
}

/// The file: header, table (ensemble frame first, then the sections in patch order),
/// frames. Refuses totals the reader would refuse.
pub fn assemble(fields: Fields, frames: &[Frame]) -> Result<Vec<u8>> {
    let sections = frames.len() - 1;
    if sections != (fields.patches as usize).div_ceil(SECTION_PATCHES) {
        return Err(LfError::Invalid(format!("{sections} sections for {} patches", fields.patches)));
    }
    let payload: u64 = frames.iter().map(|f| f.entry.payload_len).sum();
    if payload > MAX_PAYLOAD {
        return Err(LfError::Invalid(format!("payload of {payload} bytes is beyond the {MAX_PAYLOAD}-byte limit")));
    }
    let frame_bytes: usize = frames.iter().map(|f| f.bytes.len()).sum();
    let mut out = Vec::with_capacity(HEADER_LEN + (sections + 1) * ENTRY_LEN + 8 + frame_bytes);
    out.extend_from_slice(LFC_MAGIC);
    out.extend_from_slice(&LFC_VERSION.to_le_bytes());
    fields.size.iter().for_each(|s| out.extend_from_slice(&s.to_le_bytes()));
    out.extend_from_slice(&fields.sparsity.to_le_bytes());
    out.extend_from_slice(&fields.epsilon.to_le_bytes());
    out.extend_from_slice(&fields.step.to_le_bytes());
    out.extend_from_slice(&(SECTION_PATCHES as u32).to_le_bytes());
    out.extend_from_slice(&fields.patches.to_le_bytes());
    out.extend_from_slice(&fields.coefficients.to_le_bytes());
    out.extend_from_slice(&(sections as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&fnv1a64(&out).to_le_bytes());
    debug_assert_eq!(out.len(), HEADER_LEN);
    for f in frames {
        let e = f.entry;
        [e.coefficients, e.payload_len, e.frame_len, e.checksum]
            .iter()
            .for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
    }
    out.extend_from_slice(&fnv1a64(&out[HEADER_LEN..]).to_le_bytes());
    frames.iter().for_each(|f| out.extend_from_slice(&f.bytes));
    Ok(out)
}

/// The `.lfc` header and section table, every size checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    pub size: [usize; 4],
    pub sparsity: u32,
    pub epsilon: f32,
    pub step: f32,
    pub section_patches: usize,
    pub patches: u64,
    pub coefficients: u64,
    /// The ensemble's entry, then one per section.
    pub entries: Vec<Entry>,
    /// Where each entry's frame starts in the file.
    pub starts: Vec<usize>,
    /// Decompressed bytes of every frame together.
    pub payload_len: u64,
    /// Bytes of every frame together.
    pub frame_len: u64,
}

impl Header {
    /// Parses the header and the section table and checks every declared size: the hashes,
    /// the section count against the patch count, the frames against the bytes present
    /// and (the ensemble's) zstd's largest expansion, the coefficients against the sparsity,
    /// and the memory budget (the payload, the coefficients, and the decoded light field
    /// of U x V x H x W x 3 f32), in checked u64 arithmetic. `info` and `decode` share it.
    pub fn parse(bytes: &[u8]) -> Result<Header> {
        if bytes.len() < 8 || &bytes[..4] != LFC_MAGIC {
            return Err(LfError::corrupt(WHAT, "not a .lfc file (bad magic or too short)"));
        }
        let version = u32::from_le_bytes(bytes[4..8].try_into().unwrap());
        if version == 1 || version == 2 {
            return Err(LfError::corrupt(
                WHAT,
                format!(
                    "version {version} (zstd-compressed coefficients, before the range-coded sections); \
                     this build reads version {LFC_VERSION}: encode the light field again"
                ),
            ));
        }
        if version != LFC_VERSION {
            return Err(LfError::corrupt(WHAT, format!("version {version}, this build reads {LFC_VERSION}")));
        }
        if bytes.len() < HEADER_LEN {
            return Err(LfError::corrupt(WHAT, "header truncated"));
        }
        if fnv1a64(&bytes[..HEADER_LEN - 8])
            != u64::from_le_bytes(bytes[HEADER_LEN - 8..HEADER_LEN].try_into().unwrap())
        {
            return Err(LfError::corrupt(WHAT, "header checksum mismatch"));
        }
        let mut r = ByteReader::new(&bytes[8..HEADER_LEN - 8], "light-field bitstream header");
        let size: [u32; 4] = [r.u32()?, r.u32()?, r.u32()?, r.u32()?];
        let (sparsity, epsilon, step, section_patches) = (r.u32()?, r.f32()?, r.f32()?, r.u32()? as usize);
        let (patches, coefficients, sections, reserved) = (r.u64()?, r.u64()?, r.u32()? as usize, r.u32()?);
        if size.contains(&0) {
            return Err(r.error(format!("light-field size {size:?} is empty")));
        }
        if !(epsilon.is_finite() && epsilon > 0.0 && step.is_finite() && step > 0.0) {
            return Err(r.error("epsilon or quantisation step is not a positive number"));
        }
        if !(1..=MAX_SECTION_PATCHES).contains(&section_patches) || reserved != 0 {
            return Err(r.error(format!("{section_patches} patches per section (1..={MAX_SECTION_PATCHES})")));
        }
        if patches == 0 || sections as u64 != patches.div_ceil(section_patches as u64) {
            return Err(r.error(format!("{sections} sections of {section_patches} patches for {patches} patches")));
        }
        // The table's length is bounded by the bytes present before anything is sized by it.
        let table_len = (sections + 1) * ENTRY_LEN + 8;
        let rest = &bytes[HEADER_LEN..];
        if rest.len() < table_len {
            return Err(LfError::corrupt(WHAT, format!("section table of {sections} sections truncated")));
        }
        let (table, hash) = rest[..table_len].split_at(table_len - 8);
        if fnv1a64(table) != u64::from_le_bytes(hash.try_into().unwrap()) {
            return Err(LfError::corrupt(WHAT, "section table checksum mismatch (damaged table)"));
        }
        let mut t = ByteReader::new(table, "light-field section table");
        let mut entries = Vec::with_capacity(sections + 1);
        for _ in 0..=sections {
            entries.push(Entry {
                coefficients: t.u64()?,
                payload_len: t.u64()?,
                frame_len: t.u64()?,
                checksum: t.u64()?,
            });
        }
        let h = Header {
            size: size.map(|s| s as usize),
            sparsity,
            epsilon,
            step,
            section_patches,
            patches,
            coefficients,
            starts: Vec::new(),
            payload_len: 0,
            frame_len: 0,
            entries,
        };
        h.check_entries(HEADER_LEN + table_len, bytes.len())
    }

    /// Checks the table's entries against the header and the file's length; fills the
    /// frames' starts and the totals.
    fn check_entries(mut self, first: usize, file_len: usize) -> Result<Header> {
        let bad = |i: usize, m: String| LfError::corrupt(WHAT, format!("section table entry {i}: {m}"));
        let (mut at, mut payload, mut coefficients) = (first as u64, 0u64, 0u64);
        for (i, e) in self.entries.iter().enumerate() {
            self.starts.push(at as usize);
            at = at.checked_add(e.frame_len).filter(|&a| a <= file_len as u64).ok_or_else(|| {
                bad(i, format!("frame of {} bytes past the end of the {file_len}-byte file (truncated?)", e.frame_len))
            })?;
            if i == 0 && e.payload_len > e.frame_len.saturating_mul(ZSTD_MAX_RATIO) {
                return Err(bad(i, format!("{} bytes cannot come from a {}-byte frame", e.payload_len, e.frame_len)));
            }
            if i > 0 && e.payload_len != e.frame_len {
                return Err(bad(i, format!("a range-coded section of {} bytes says {}", e.frame_len, e.payload_len)));
            }
            payload = payload.saturating_add(e.payload_len);
            let n = if i == 0 { 0 } else { self.section(i - 1).len() as u64 };
            if e.coefficients > self.sparsity as u64 * n {
                return Err(bad(
                    i,
                    format!("{} coefficients in {n} patches of at most {}", e.coefficients, self.sparsity),
                ));
            }
            coefficients += e.coefficients;
        }
        if at != file_len as u64 {
            return Err(LfError::corrupt(WHAT, format!("{} bytes after the last frame", file_len as u64 - at)));
        }
        if coefficients != self.coefficients {
            return Err(LfError::corrupt(
                WHAT,
                format!("sections hold {coefficients} coefficients, header says {}", self.coefficients),
            ));
        }
        if payload > MAX_PAYLOAD {
            return Err(LfError::corrupt(WHAT, format!("a payload of {payload} bytes is beyond {MAX_PAYLOAD}")));
        }
        kit::budget::check(payload, "the .lfc payload")?;
        kit::budget::elements(&[coefficients, 2], 4, "the coefficients")?;
        let [u, v, h, w] = self.size.map(|s| s as u64);
        let what = format!("decoding {u}x{v} views of {w}x{h} pixels");
        kit::budget::elements(&[u, v, h, w, crate::lightfield::COLOURS as u64], 4, &what)?;
        self.payload_len = payload;
        self.frame_len = at - first as u64;
        Ok(self)
    }

    /// Number of coefficient sections.
    pub fn sections(&self) -> usize {
        self.entries.len() - 1
    }

    /// The patches of section `s`.
    pub fn section(&self, s: usize) -> Range<usize> {
        let start = s * self.section_patches;
        start..(start + self.section_patches).min(self.patches as usize)
    }

    /// Section `s`'s entry and frame.
    pub fn section_frame<'a>(&self, bytes: &'a [u8], s: usize) -> (&Entry, &'a [u8]) {
        self.frame(bytes, s + 1)
    }

    fn frame<'a>(&self, bytes: &'a [u8], i: usize) -> (&Entry, &'a [u8]) {
        let e = &self.entries[i];
        (e, &bytes[self.starts[i]..self.starts[i] + e.frame_len as usize])
    }

    /// Decompresses and reads the ensemble (entry 0).
    pub fn ensemble(&self, bytes: &[u8]) -> Result<Ensemble> {
        let payload = unpack(self.frame(bytes, 0), 0)?;
        let mut r = ByteReader::new(&payload, "light-field bitstream ensemble");
        let ensemble = Ensemble::read_body(&mut r)?;
        r.finish()?;
        Ok(ensemble)
    }
}

/// Checks the ensemble frame's checksum and header, then decompresses it (its size was
/// checked against the budget by [`Header::parse`]).
fn unpack((e, frame): (&Entry, &[u8]), i: usize) -> Result<Vec<u8>> {
    let bad = |m: String| LfError::corrupt(WHAT, format!("frame {i}: {m}"));
    if hash64(frame) != e.checksum {
        return Err(bad("checksum mismatch (damaged frame)".into()));
    }
    check_frame(frame, e.payload_len).map_err(|err| bad(err.to_string()))?;
    let mut zstd = zstd::bulk::Decompressor::new().map_err(|e| LfError::Invalid(format!("zstd: {e}")))?;
    let mut bytes = Vec::with_capacity(e.payload_len as usize);
    let n = zstd.decompress_to_buffer(frame, &mut bytes).map_err(|err| bad(format!("zstd: {err}")))?;
    if n as u64 != e.payload_len {
        return Err(bad("payload shorter than the table says".into()));
    }
    Ok(bytes)
}

/// What a section's values are checked against.
pub struct Bounds {
    pub grid: PatchGrid,
    pub step: f32,
    pub dictionaries: usize,
    pub sparsity: usize,
}

/// Where one section's parsed codes go: `membership` and `offsets` (patches + 1, from 0
/// within the section) per patch, `locations` and `levels` per coefficient (lengths from
/// the table). The GPU's staging words and the CPU's [`Codes`] both take this form.
pub struct SectionOut<'a> {
    pub membership: &'a mut [u32],
    pub offsets: &'a mut [u32],
    pub locations: &'a mut [u32],
    pub levels: &'a mut [i32],
}

impl Bounds {
    /// The section coder's limits.
    pub fn limits(&self) -> Limits {
        Limits { dictionaries: self.dictionaries, patch_len: self.grid.shape.len(), sparsity: self.sparsity }
    }
}

/// Checks section `s`'s checksum, then decodes it, checking every value (membership below
/// K, counts within the sparsity, locations inside the patch, levels within what values in
/// [0, 1] can hold) and the coefficient count against the table's.
///
/// `out` may be write-combined staging memory: it is only written, in order, never read.
pub fn parse_section(header: &Header, bytes: &[u8], s: usize, b: &Bounds, out: SectionOut) -> Result<()> {
    let (e, frame) = header.section_frame(bytes, s);
    let bad = |m: String| LfError::corrupt(WHAT, format!("section {s}: {m}"));
    if hash64(frame) != e.checksum {
        return Err(LfError::corrupt(WHAT, format!("frame {}: checksum mismatch (damaged frame)", s + 1)));
    }
    let mut coder = kit::entropy::Decoder::new(frame).map_err(|e| bad(e.to_string()))?;
    let mut models = SectionModels::new(b.limits());
    let plen = b.grid.shape.len();
    let mut patch = PatchBuf::default();
    let mut total = 0usize;
    out.offsets[0] = 0;
    for (j, p) in header.section(s).enumerate() {
        let bound = max_level(b.step, b.grid.valid_samples(p), plen);
        models.patch(&mut coder, PatchRef::NONE, bound, &mut patch).map_err(|e| bad(format!("patch {p}: {e}")))?;
        out.membership[j] = patch.membership;
        let end = total + patch.locations.len();
        if end > out.locations.len() {
            return Err(bad(format!("more coefficients than the table's {}", out.locations.len())));
        }
        out.locations[total..end].copy_from_slice(&patch.locations);
        out.levels[total..end].copy_from_slice(&patch.levels);
        total = end;
        out.offsets[j + 1] = total as u32;
    }
    if total != out.locations.len() {
        return Err(bad(format!("{total} coefficients, the table says {}", out.locations.len())));
    }
    Ok(())
}

/// Splits `slice` into consecutive pieces of `lens` (whose sum must not exceed its length).
pub fn split_lens<T>(mut slice: &mut [T], lens: impl IntoIterator<Item = usize>) -> Vec<&mut [T]> {
    lens.into_iter()
        .map(|n| {
            let (head, tail) = std::mem::take(&mut slice).split_at_mut(n);
            slice = tail;
            head
        })
        .collect()
}

/// The largest level magnitude a patch with `valid` of its `plen` samples can hold at base
/// step `step`: its coefficients have the norm of its samples (orthonormal dictionaries),
/// at most sqrt(plen) for values in [0, 1]. Twice that, plus rounding, leaves the f32
/// rounding of the encoder's products far behind, and keeps every decoded value finite.
pub(crate) fn max_level(step: f32, valid: usize, plen: usize) -> u64 {
    let step = crate::codes::patch_step(step, valid, plen) as f64;
    (2.0 * (plen as f64).sqrt() / step).ceil() as u64 + 2
}

/// zstd's frame magic number, little-endian.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// The frame must be exactly one zstd frame (no skippable or further frames, no trailing
/// bytes), with a content checksum (zstd verifies it while decoding; the decoder accepts a
/// frame without one, so the flag is checked here), no dictionary, and a declared content
/// size equal to the header's payload length.
pub(crate) fn check_frame(frame: &[u8], payload_len: u64) -> Result<()> {
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
