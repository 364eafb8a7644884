//! The `.lfc` layout (versions 2, 4 and 5): a fixed header, a section table, then
//! independent frames: the ensemble first (zstd), then one per run of `section_patches`
//! patches (the last run may be short). Each frame has its size and a checksum in the table, so the encoder
//! compresses a section on the CPU while the GPU encodes the next ones, and the decoder
//! decompresses and parses sections in parallel and uploads each as soon as it is parsed.
//! A section's payload is four streams (every patch's membership, coefficient count,
//! coefficient locations delta coded and quantised levels zigzagged, as LEB128 varints) so
//! zstd sees similar symbols together. From version 5 a section's frame may instead be the
//! same codes range coded under adaptive context models ([`crate::entropy`]), whichever
//! is smaller. docs/formats.md has the byte layout and every check the reader makes.

use std::ops::Range;

use crate::bytes::{fnv1a64, put_varint, unzigzag, zigzag, ByteReader, LFC_MAGIC};
use crate::codes::Codes;
use crate::dictionary::Ensemble;
use crate::entropy::{self, Scan};
use crate::error::{LfError, Result};
use crate::patch::PatchGrid;

/// The version the writer writes: version 4 whose sections may each be range coded
/// ([`RANGED_MAGIC`]) instead of zstd over varints.
pub const LFC_VERSION: u32 = 5;
/// Still read: version 2's layout (every section zstd) with the quantisation step at
/// [`crate::codes::STEP_PER_EPSILON`] times epsilon. Version 3 was a range-coded layout
/// that was dropped and is refused.
pub const LFC_VERSION_ZSTD: u32 = 4;
/// The oldest version still read: every section zstd, the step equal to epsilon.
pub const LFC_VERSION_STEP_EPSILON: u32 = 2;

/// The step a file of `version` must hold for `epsilon`, if the version is one this
/// build reads.
pub fn version_step(version: u32, epsilon: f32) -> Option<f32> {
    match version {
        LFC_VERSION | LFC_VERSION_ZSTD => Some(epsilon * crate::codes::STEP_PER_EPSILON),
        LFC_VERSION_STEP_EPSILON => Some(epsilon * crate::codes::STEP_PER_EPSILON_V2),
        _ => None,
    }
}

/// Whether sections of `version` may be range coded.
pub fn version_ranges(version: u32) -> bool {
    version >= LFC_VERSION
}

/// The first bytes of a range-coded section frame (a zstd frame starts with its own magic).
pub const RANGED_MAGIC: &[u8; 4] = b"LFRC";
/// Header bytes before the section table.
pub const HEADER_LEN: usize = 72;
/// Bytes of one section-table entry.
pub const ENTRY_LEN: usize = 32;
/// Patches per section the writer uses: 1024 paper-size patches are ~1.5 MB of payload,
/// so the Table 1 light field (42,025 patches) has 42 sections, several per CPU thread
/// of a 16-core host, and a GPU chunk of 4096 patches yields four to compress at once.
pub const SECTION_PATCHES: usize = 1024;
/// Most patches per section a reader accepts: keeps every section's coefficient count
/// (at most sparsity x patches, sparsity <= 16^4 x 3) within 32 bits.
pub const MAX_SECTION_PATCHES: usize = 1 << 14;
/// zstd level of every frame. At Table 1 size on an H200 host, level 4 against level 6:
/// 1.4% more bytes (0.5394 against 0.5319 bits per sample), 40% less compression CPU time
/// (276-323 against 409-532 ms over all threads), and the `.npy` -> `.lfc` encode, where
/// compression shares the CPU with the `.npy` read and the gather, 231-238 against 244-258 ms.
const ZSTD_LEVEL: i32 = 4;
/// Largest decompressed payload a reader accepts in all (a corrupt length must not make it
/// allocate without bound); the memory budget may refuse less.
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
    /// Bytes once decompressed.
    pub payload_len: u64,
    /// Bytes of the zstd frame in the file.
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

/// Compresses one payload into a frame with zstd's content checksum, on this thread (one
/// compressor kept per thread; the output does not depend on which thread).
pub fn compress(payload: &[u8], coefficients: u64) -> Result<Frame> {
    let bytes = COMPRESSOR.with(|cell| -> Result<Vec<u8>> {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            let mut c = zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(LfError::Zstd)?;
            c.include_checksum(true).map_err(LfError::Zstd)?;
            *cell = Some(c);
        }
        cell.as_mut().expect("made above").compress(payload).map_err(LfError::Zstd)
    })?;
    let entry = Entry {
        coefficients,
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
    compress(&body, 0)
}

/// A range-coded section is written only if its frame is at most this share of the zstd
/// frame: parsing it takes about twice as long (CPU, per coefficient: 147 against 69 ns on a
/// rendered scene's section, 183 against 91 ms for a Table 1 stand-in's four sections on two
/// cores), and the decode to device memory at Table 1 size has a budget of 50 ms. The
/// rendered 9x9 scenes' sections range code 8-20% smaller, the Table 1 stand-in's about 4%.
pub const RANGED_MOST_SHARE: f64 = 0.94;

/// The frame of patches `range` of `codes` (one section, whose first patch is patch
/// `first` of the light field): zstd over the varint streams, or, where `ranged` gives the
/// bounds of a version that allows it, the range-coded frame when that is at most
/// [`RANGED_MOST_SHARE`] of zstd's.
pub fn section_frame(codes: &Codes, range: Range<usize>, first: usize, ranged: Option<&Bounds>) -> Result<Frame> {
    let mut streams = Streams::default();
    streams.push(codes, range.clone());
    let coefficients = (codes.offsets[range.end] - codes.offsets[range.start]) as u64;
    let payload = streams.concat();
    let zstd = compress(&payload, coefficients)?;
    let lens = (payload.len() as u64, zstd.entry.frame_len);
    let ranged = ranged.and_then(|b| ranged_frame(codes, range, first, b, lens, coefficients));
    Ok(match ranged {
        Some(r) if (r.entry.frame_len as f64) <= RANGED_MOST_SHARE * zstd.entry.frame_len as f64 => r,
        _ => zstd,
    })
}

/// The range-coded frame of patches `range` of `codes` ([`RANGED_MAGIC`], then the coded
/// bytes), its table entry's payload the varint streams' length `payload_len` (what the
/// reader checks the decoded codes against). `None` where the coder cannot hold the codes
/// (a level of 0, a value beyond the reader's bounds), the frame would expand beyond what
/// the table allows, or a trial on every [`TRIAL_STRIDE`]-th patch shows that it would not
/// come under [`RANGED_MOST_SHARE`] of `zstd_len`; the section is then zstd coded.
fn ranged_frame(
    codes: &Codes,
    range: Range<usize>,
    first: usize,
    b: &Bounds,
    (payload_len, zstd_len): (u64, u64),
    coefficients: u64,
) -> Option<Frame> {
    // Coding takes 100-200 ns a coefficient, several times zstd's: a section whose trial,
    // scaled to the section, is clearly over the share that would win is not coded in
    // full. The trial's models learn from an eighth of the patches, which are also less
    // alike than neighbours: it comes out 3-4% larger than the whole section's share.
    let patches = || range.clone().zip(first..);
    if range.len() >= TRIAL_MIN_PATCHES {
        let trial = range_coded(codes, patches().step_by(TRIAL_STRIDE), b)?;
        let sampled = range.len().div_ceil(TRIAL_STRIDE);
        let estimate = trial.len() as f64 * range.len() as f64 / sampled as f64;
        if estimate > RANGED_MOST_SHARE * TRIAL_SLACK * zstd_len as f64 {
            return None;
        }
    }
    let bytes = [&RANGED_MAGIC[..], &range_coded(codes, patches(), b)?].concat();
    let frame_len = bytes.len() as u64;
    if payload_len > frame_len.saturating_mul(ZSTD_MAX_RATIO) {
        return None;
    }
    Some(Frame { entry: Entry { coefficients, payload_len, frame_len, checksum: hash64(&bytes) }, bytes })
}

/// Every [`TRIAL_STRIDE`]-th patch of a section is range coded first, where it has at least
/// [`TRIAL_MIN_PATCHES`].
const TRIAL_STRIDE: usize = 8;
const TRIAL_MIN_PATCHES: usize = 128;
/// How far over [`RANGED_MOST_SHARE`] a trial may come out and the section still be coded.
const TRIAL_SLACK: f64 = 1.05;

/// The range coder's bytes of `patches` of `codes`, each given as (its index in `codes`,
/// its index in the light field, for its bound), or `None` where the coder cannot hold them.
pub(crate) fn range_coded(codes: &Codes, patches: impl Iterator<Item = (usize, usize)>, b: &Bounds) -> Option<Vec<u8>> {
    let plen = b.grid.shape.len();
    let mut models = entropy::SectionModels::new(b.limits());
    let mut enc = entropy::Encoder::default();
    let (mut truth, mut out) = (Vec::new(), Vec::new());
    for (p, in_light_field) in patches {
        let k = codes.membership[p];
        let span = codes.offsets[p]..codes.offsets[p + 1];
        truth.clear();
        for (&loc, &level) in codes.locations[span.clone()].iter().zip(&codes.levels[span]) {
            if level == 0 || loc as usize >= plen {
                return None;
            }
            truth.push((b.scan_position(k, loc), level));
        }
        truth.sort_unstable_by_key(|t| t.0);
        let bound = max_level(b.step, b.grid.valid_samples(in_light_field), plen);
        models.membership(&mut enc, k).ok()?;
        models.coefficients(&mut enc, b.scans.get(k as usize), &truth, bound, &mut out).ok()?;
    }
    Some(enc.finish())
}

/// The header words the writer fills in.
#[derive(Clone, Copy, Debug)]
pub struct Fields {
    pub version: u32,
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
        return Err(LfError::SectionCount { sections, patches: fields.patches });
    }
    let payload: u64 = frames.iter().map(|f| f.entry.payload_len).sum();
    if payload > MAX_PAYLOAD {
        return Err(LfError::PayloadLimit { bytes: payload, max: MAX_PAYLOAD });
    }
    let frame_bytes: usize = frames.iter().map(|f| f.bytes.len()).sum();
    let mut out = Vec::with_capacity(HEADER_LEN + (sections + 1) * ENTRY_LEN + 8 + frame_bytes);
    out.extend_from_slice(LFC_MAGIC);
    out.extend_from_slice(&fields.version.to_le_bytes());
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
    /// [`LFC_VERSION`], [`LFC_VERSION_ZSTD`] or [`LFC_VERSION_STEP_EPSILON`].
    pub version: u32,
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
    /// and zstd's largest expansion, the coefficients against the sparsity and the payload,
    /// and the memory budget (the payload, the coefficients, and the decoded light field
    /// of U x V x H x W x 3 f32), in checked u64 arithmetic. `info` and `decode` share it.
    pub fn parse(bytes: &[u8]) -> Result<Header> {
        if bytes.len() < 8 || &bytes[..4] != LFC_MAGIC {
            return Err(LfError::corrupt(WHAT, "not a .lfc file (bad magic or too short)"));
        }
        let version = u32::from_le_bytes(bytes[4..8].try_into().unwrap());
        if version == 1 {
            return Err(LfError::corrupt(
                WHAT,
                "version 1 (one zstd frame, before the sectioned format); this build reads version 2: \
                 encode the light field again",
            ));
        }
        if version_step(version, 1.0).is_none() {
            return Err(LfError::corrupt(
                WHAT,
                format!(
                    "version {version}, this build reads {LFC_VERSION_STEP_EPSILON}, {LFC_VERSION_ZSTD} and {LFC_VERSION}"
                ),
            ));
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
            version,
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
            if e.payload_len > e.frame_len.saturating_mul(ZSTD_MAX_RATIO) {
                return Err(bad(i, format!("{} bytes cannot come from a {}-byte frame", e.payload_len, e.frame_len)));
            }
            payload = payload.saturating_add(e.payload_len);
            let n = if i == 0 { 0 } else { self.section(i - 1).len() as u64 };
            // Every patch needs a membership and a count byte, every coefficient a
            // location and a level byte.
            let most = (self.sparsity as u64 * n).min(e.payload_len.saturating_sub(2 * n) / 2);
            if e.coefficients > most || (i > 0 && e.payload_len < 2 * n) {
                return Err(bad(
                    i,
                    format!("{} coefficients in {n} patches and {} bytes", e.coefficients, e.payload_len),
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

/// Checks a frame's checksum and header, then decompresses it (its size was checked
/// against the budget by [`Header::parse`]).
fn unpack(frame: (&Entry, &[u8]), i: usize) -> Result<Vec<u8>> {
    let mut payload = Unpacker::new()?;
    payload.unpack(frame, i)?;
    Ok(payload.bytes)
}

/// A zstd decompressor and the buffer it fills, reused frame after frame (one per thread):
/// a fresh context and a fresh allocation of a section's megabytes, with its page faults,
/// cost more than small sections take to decompress.
struct Unpacker {
    zstd: zstd::bulk::Decompressor<'static>,
    bytes: Vec<u8>,
}

impl Unpacker {
    fn new() -> Result<Unpacker> {
        let zstd = zstd::bulk::Decompressor::new().map_err(LfError::Zstd)?;
        Ok(Unpacker { zstd, bytes: Vec::new() })
    }

    /// Checks frame `i`'s checksum and header, then decompresses it into `self.bytes`.
    fn unpack(&mut self, (e, frame): (&Entry, &[u8]), i: usize) -> Result<&[u8]> {
        let bad = |m: String| LfError::corrupt(WHAT, format!("frame {i}: {m}"));
        if hash64(frame) != e.checksum {
            return Err(bad("checksum mismatch (damaged frame)".into()));
        }
        check_frame(frame, e.payload_len).map_err(|err| bad(err.to_string()))?;
        self.bytes.clear();
        self.bytes.reserve(e.payload_len as usize);
        let n = self.zstd.decompress_to_buffer(frame, &mut self.bytes).map_err(|err| bad(format!("zstd: {err}")))?;
        if n as u64 != e.payload_len {
            return Err(bad("payload shorter than the table says".into()));
        }
        Ok(&self.bytes)
    }
}

thread_local! {
    static UNPACKER: std::cell::RefCell<Option<Unpacker>> = const { std::cell::RefCell::new(None) };
}

/// What a section's values are checked against, and the dictionaries' scan orders that
/// range-coded sections are coded in.
pub struct Bounds {
    pub grid: PatchGrid,
    pub step: f32,
    pub dictionaries: usize,
    pub sparsity: usize,
    /// One per dictionary; empty (every dictionary in location order) where K x P exceeds
    /// [`MAX_SCAN_ENTRIES`].
    pub scans: Vec<Scan>,
}

/// Most scan entries (K x P) kept: 32 MiB of scan tables.
pub const MAX_SCAN_ENTRIES: usize = 1 << 22;

impl Bounds {
    pub fn new(grid: PatchGrid, step: f32, ensemble: &Ensemble, sparsity: usize) -> Bounds {
        let scans = if ensemble.k.saturating_mul(ensemble.shape.len()) <= MAX_SCAN_ENTRIES {
            entropy::scans(ensemble)
        } else {
            Vec::new()
        };
        Bounds { grid, step, dictionaries: ensemble.k, sparsity, scans }
    }

    fn limits(&self) -> entropy::Limits {
        entropy::Limits { dictionaries: self.dictionaries, patch_len: self.grid.shape.len(), sparsity: self.sparsity }
    }

    fn scan_position(&self, k: u32, loc: u32) -> u32 {
        self.scans.get(k as usize).map_or(loc, |s| s.position[loc as usize])
    }

    fn scan_location(&self, k: u32, position: u32) -> u32 {
        self.scans.get(k as usize).map_or(position, |s| s.order[position as usize])
    }
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

/// Decompresses and parses section `s`, checking every value (membership below K, counts
/// within the sparsity, locations inside the patch, levels within what values in [0, 1]
/// can hold) and that the streams end exactly where the table says.
///
/// `out` may be write-combined staging memory: it is only written, in order, never read.
pub fn parse_section(header: &Header, bytes: &[u8], s: usize, b: &Bounds, out: SectionOut) -> Result<()> {
    let (entry, frame) = header.section_frame(bytes, s);
    if version_ranges(header.version) && frame.starts_with(RANGED_MAGIC) {
        if hash64(frame) != entry.checksum {
            return Err(LfError::corrupt(WHAT, format!("frame {}: checksum mismatch (damaged frame)", s + 1)));
        }
        return parse_ranged(header, &frame[RANGED_MAGIC.len()..], entry.payload_len, s, b, out);
    }
    UNPACKER.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = Some(Unpacker::new()?);
        }
        let payload = cell.as_mut().expect("made above").unpack(header.section_frame(bytes, s), s + 1)?;
        parse_payload(header, payload, s, b, out)
    })
}

fn parse_payload(header: &Header, payload: &[u8], s: usize, b: &Bounds, out: SectionOut) -> Result<()> {
    let range = header.section(s);
    let plen = b.grid.shape.len() as u64;
    let mut r = ByteReader::new(payload, "light-field bitstream section");
    let in_section = |m: LfError| LfError::corrupt(WHAT, format!("section {s}: {m}"));
    (|| -> Result<()> {
        for m in out.membership.iter_mut() {
            let k = r.varint()?;
            if k >= b.dictionaries as u64 {
                return Err(r.error(format!("membership {k} but only {} dictionaries", b.dictionaries)));
            }
            *m = k as u32;
        }
        // The offsets are kept here too, so `out` is never read back.
        let mut offsets = Vec::with_capacity(out.offsets.len());
        offsets.push(0u32);
        let mut total = 0u64;
        for _ in 1..out.offsets.len() {
            let c = r.varint()?;
            if c > b.sparsity as u64 {
                return Err(r.error(format!("patch with {c} coefficients, sparsity is {}", b.sparsity)));
            }
            total += c;
            if total > out.locations.len() as u64 {
                return Err(r.error(format!("more coefficients than the table's {}", out.locations.len())));
            }
            offsets.push(total as u32);
        }
        if total != out.locations.len() as u64 {
            return Err(r.error(format!("{total} coefficients, the table says {}", out.locations.len())));
        }
        out.offsets.copy_from_slice(&offsets);
        for (j, _) in range.clone().enumerate() {
            let mut prev: Option<u64> = None;
            for loc in &mut out.locations[offsets[j] as usize..offsets[j + 1] as usize] {
                let d = r.varint()?;
                let l = prev.map_or(Some(d), |q| q.checked_add(d).and_then(|x| x.checked_add(1)));
                let l = l
                    .filter(|&l| l < plen)
                    .ok_or_else(|| r.error(format!("coefficient location past the patch ({plen} samples)")))?;
                *loc = l as u32;
                prev = Some(l);
            }
        }
        for (j, p) in range.clone().enumerate() {
            let bound = max_level(b.step, b.grid.valid_samples(p), plen as usize);
            for level in &mut out.levels[offsets[j] as usize..offsets[j + 1] as usize] {
                let z = r.varint()?;
                if z > u32::MAX as u64 || unzigzag(z).unsigned_abs() as u64 > bound {
                    return Err(r.error(format!(
                        "coefficient level of patch {p} beyond {bound}, more than a patch of values in [0, 1] holds"
                    )));
                }
                *level = unzigzag(z);
            }
        }
        r.finish()
    })()
    .map_err(in_section)
}

/// Decodes range-coded section `s` (`coded`, after the magic) into `out`, checking every
/// value as [`parse_payload`] does, that the coded bytes end where the decisions do, and
/// that the codes' varint streams are the table's `payload_len` bytes.
fn parse_ranged(header: &Header, coded: &[u8], payload_len: u64, s: usize, b: &Bounds, out: SectionOut) -> Result<()> {
    let bad = |m: String| LfError::corrupt(WHAT, format!("section {s}: range-coded {m}"));
    let plen = b.grid.shape.len();
    let mut dec =
        entropy::Decoder::new(coded).ok_or_else(|| bad("frame too short or without its leading zero".into()))?;
    let mut models = entropy::SectionModels::new(b.limits());
    let (mut pairs, mut sorted) = (Vec::new(), Vec::new());
    let (mut total, mut varints) = (0usize, 0u64);
    let capacity = out.locations.len();
    let (mut locations, mut levels) = (out.locations.iter_mut(), out.levels.iter_mut());
    out.offsets[0] = 0;
    for (j, p) in header.section(s).enumerate() {
        let bound = max_level(b.step, b.grid.valid_samples(p), plen);
        let refused = |m: &str| bad(format!("patch {p}: {m}"));
        let k = models.membership(&mut dec, 0).map_err(refused)?;
        models.coefficients(&mut dec, b.scans.get(k as usize), &[], bound, &mut pairs).map_err(refused)?;
        total += pairs.len();
        if total > capacity {
            return Err(bad(format!("codes hold more coefficients than the table's {capacity}")));
        }
        out.membership[j] = k;
        out.offsets[j + 1] = total as u32;
        varints += varint_len(k as u64) + varint_len(pairs.len() as u64);
        sorted.clear();
        sorted.extend(pairs.iter().map(|&(at, level)| (b.scan_location(k, at), level)));
        sorted.sort_unstable_by_key(|t| t.0);
        let mut prev: Option<u32> = None;
        for &(loc, level) in &sorted {
            varints += varint_len(prev.map_or(loc, |q| loc - q - 1) as u64) + varint_len(zigzag(level));
            prev = Some(loc);
            *locations.next().expect("within capacity") = loc;
            *levels.next().expect("within capacity") = level;
        }
    }
    if total != capacity {
        return Err(bad(format!("codes hold {total} coefficients, the table says {capacity}")));
    }
    if !dec.finish() {
        return Err(bad("bytes do not end where the codes do (cut short or trailing bytes)".into()));
    }
    if varints != payload_len {
        return Err(bad(format!("codes are {varints} bytes as varints, the table says {payload_len}")));
    }
    Ok(())
}

/// Bytes of `v` as an LEB128 varint.
fn varint_len(v: u64) -> u64 {
    (64 - (v | 1).leading_zeros() as u64).div_ceil(7)
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

    /// The four streams back to back: a section's payload.
    pub fn concat(&self) -> Vec<u8> {
        [&self.membership[..], &self.counts, &self.locations, &self.levels].concat()
    }

    /// Bytes of the four streams.
    pub fn len(&self) -> usize {
        self.membership.len() + self.counts.len() + self.locations.len() + self.levels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where a `.lfc` file's bytes go, for `info`: the fixed parts exactly, the coefficient
/// sections split by stream. The streams of a section share one zstd frame, so a stream's
/// share is estimated by compressing that stream alone over the whole file (same level);
/// the estimates need not sum to `sections`, which is exact.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Breakdown {
    /// The fixed header (with its hash).
    pub header: u64,
    /// The section table (with its hash).
    pub table: u64,
    /// The ensemble's frame (the dictionaries).
    pub dictionaries: u64,
    /// Every coefficient section's frame.
    pub sections: u64,
    /// Sections range coded (version 5), the others zstd.
    pub range_coded_sections: u64,
    /// Per stream, bytes before compression.
    pub raw: StreamBytes,
    /// Per stream, bytes compressed alone.
    pub compressed_alone: StreamBytes,
    /// Patches with samples past the light field's edge (padding), and coefficients in them.
    pub padded_patches: u64,
    pub padded_patch_coefficients: u64,
    /// Samples the patches cover (padding included) over the light field's samples.
    pub coded_over_real_samples: f64,
}

/// Bytes of each of a section's four streams.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct StreamBytes {
    /// Dictionary choice per patch.
    pub membership: u64,
    /// Coefficients per patch.
    pub counts: u64,
    /// Coefficient locations (delta coded).
    pub locations: u64,
    /// Quantised values (zigzagged).
    pub levels: u64,
}

impl Breakdown {
    /// The breakdown of a file `header` parsed from `bytes`, whose codes are `codes` on
    /// patch grid `grid`.
    pub fn new(header: &Header, bytes: &[u8], codes: &Codes, grid: &PatchGrid) -> Result<Breakdown> {
        let ranged = (0..header.sections()).filter(|&s| header.section_frame(bytes, s).1.starts_with(RANGED_MAGIC));
        let mut s = Streams::default();
        s.push(codes, 0..codes.len());
        let streams = [&s.membership, &s.counts, &s.locations, &s.levels];
        let alone: Vec<u64> =
            streams.iter().map(|b| compress(b, 0).map(|f| f.entry.frame_len)).collect::<Result<_>>()?;
        let bytes = |v: &[u64]| StreamBytes { membership: v[0], counts: v[1], locations: v[2], levels: v[3] };
        let raw: Vec<u64> = streams.iter().map(|b| b.len() as u64).collect();
        let plen = grid.shape.len();
        let padded: Vec<usize> = (0..grid.len()).filter(|&p| grid.valid_samples(p) < plen).collect();
        let real = grid.size.iter().product::<usize>() * crate::lightfield::COLOURS;
        Ok(Breakdown {
            header: HEADER_LEN as u64,
            table: (header.entries.len() * ENTRY_LEN + 8) as u64,
            dictionaries: header.entries[0].frame_len,
            sections: header.entries[1..].iter().map(|e| e.frame_len).sum(),
            range_coded_sections: ranged.count() as u64,
            raw: bytes(&raw),
            compressed_alone: bytes(&alone),
            padded_patches: padded.len() as u64,
            padded_patch_coefficients: padded.iter().map(|&p| codes.count(p) as u64).sum(),
            coded_over_real_samples: (grid.len() * plen) as f64 / real as f64,
        })
    }
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
