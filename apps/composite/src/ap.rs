//! The Active Pixel (`.ap`) format: the file layout, a validating reader, a walker over the
//! runs of an encoded payload, and [`ApWriter`], which builds canonical payloads.
//!
//! A payload is a sequence of runs, each a header of two little-endian u32 (inactive count,
//! active count) followed by the active pixels, two u32 each (RGBA8 colour with R in the low
//! byte, then the f32 depth bits), or [`WIDE_WORDS`] each for RGBA32F colour (the four
//! channels' f32 bits, then the depth bits; the compositing library's RGBA32F images). Pixels run in row-major order, row 0 at the top. The
//! encoding is canonical: only the first header may have an inactive count of 0, only the
//! last may have an active count of 0 (when the image ends with inactive pixels), and no
//! header is (0, 0). Every producer in this crate (CPU and GPU encoders, compositing, split
//! and concatenation) emits exactly this form, so equal images have equal bytes.

use std::io::Read;
use std::path::Path;

use crate::error::{CompositeError, Result};

/// File magic.
pub const MAGIC: &[u8; 4] = b"TSAP";
/// File version.
pub const VERSION: u32 = 1;
/// Header bytes before the payload: magic, version, width, height, background, payload length.
pub const HEADER_BYTES: usize = 4 + 4 + 4 + 4 + 4 + 8;
/// Host bytes per pixel of a decoded image: the colour and depth planes and the RGBA8 copy an
/// image output is written from. Readers check this against the memory budget.
pub const DECODED_BYTES_PER_PIXEL: u64 = 4 + 4 + 4;
/// Depth of a pixel no fragment reached; such pixels are inactive.
pub const BACKGROUND_DEPTH: f32 = 1.0;
/// Words per active pixel of an RGBA8 payload: the colour, then the depth bits.
pub const PIXEL_WORDS: usize = 2;
/// Words per active pixel of an RGBA32F payload: the four channels' bits, then the depth bits.
pub const WIDE_WORDS: usize = 5;

/// An encoded run of `pixels` consecutive pixels (a whole image or a span of one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    pub pixels: usize,
    pub words: Vec<u32>,
}

impl Encoded {
    /// Payload size in bytes.
    pub fn bytes(&self) -> usize {
        self.words.len() * 4
    }

    /// A payload of `pixels` pixels from outside (received, read), once [`validate`] accepts
    /// it.
    pub fn checked(pixels: usize, words: Vec<u32>) -> Result<Encoded> {
        validate(&words, pixels)?;
        Ok(Encoded { pixels, words })
    }

    /// Number of active pixels (walks the run headers).
    pub fn active_pixels(&self) -> usize {
        runs(&self.words).map(|r| r.active as usize).sum()
    }
}

/// The pixel count that every one of `inputs` covers (what compositing needs of them).
pub fn same_pixels(inputs: &[&Encoded]) -> Result<usize> {
    let first = inputs.first().ok_or_else(|| CompositeError::Invalid("nothing to composite".into()))?;
    if let Some(other) = inputs.iter().find(|e| e.pixels != first.pixels) {
        return Err(CompositeError::PixelCounts { first: first.pixels, other: other.pixels });
    }
    Ok(first.pixels)
}

/// A whole encoded image as stored in a `.ap` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApImage {
    pub width: u32,
    pub height: u32,
    pub background: [u8; 4],
    pub encoded: Encoded,
}

/// One run of a payload: `inactive` background pixels, then `active` pixels whose words
/// (colour, depth bits; the colour of RGBA32F payloads is four words) are `pixels`.
#[derive(Clone, Copy, Debug)]
pub struct Run<'a> {
    pub inactive: u32,
    pub active: u32,
    pub pixels: &'a [u32],
}

/// Walks the runs of an RGBA8 payload that [`validate`] accepted.
pub fn runs(words: &[u32]) -> impl Iterator<Item = Run<'_>> {
    runs_of(words, PIXEL_WORDS)
}

/// Walks the runs of a payload of `stride` words per active pixel ([`PIXEL_WORDS`] or
/// [`WIDE_WORDS`]) that [`validate_of`] accepted.
pub fn runs_of(words: &[u32], stride: usize) -> impl Iterator<Item = Run<'_>> {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        if pos + 2 > words.len() {
            return None;
        }
        let (inactive, active) = (words[pos], words[pos + 1]);
        let start = pos + 2;
        pos = start + stride * active as usize;
        Some(Run { inactive, active, pixels: &words[start..pos] })
    })
}

/// Checks that `words` is a canonical RGBA8 payload of exactly `pixels` pixels whose active
/// pixels have finite depths other than the background depth 1.0.
pub fn validate(words: &[u32], pixels: usize) -> Result<()> {
    validate_of(words, pixels, PIXEL_WORDS)
}

/// [`validate`] for a payload of `stride` words per active pixel (the depth is the last).
pub fn validate_of(words: &[u32], pixels: usize, stride: usize) -> Result<()> {
    let corrupt = |m: String| Err(CompositeError::Corrupt(m));
    let mut pos = 0usize;
    let mut total = 0u64;
    let mut headers = 0usize;
    while pos < words.len() {
        if pos + 2 > words.len() {
            return corrupt(format!("run header at byte {} is cut off", pos * 4));
        }
        let (inactive, active) = (words[pos], words[pos + 1]);
        if inactive == 0 && active == 0 {
            return corrupt(format!("empty run (0, 0) at byte {}", pos * 4));
        }
        if inactive == 0 && headers > 0 {
            return corrupt(format!("run at byte {} has no inactive pixels but is not the first", pos * 4));
        }
        let end = (pos + 2).saturating_add((active as usize).saturating_mul(stride));
        if end > words.len() {
            return corrupt(format!(
                "run at byte {} claims {active} active pixels but the payload ends after {} more bytes",
                pos * 4,
                (words.len() - pos - 2) * 4
            ));
        }
        if active == 0 && end != words.len() {
            return corrupt(format!("run at byte {} has no active pixels but is not the last", pos * 4));
        }
        for (k, px) in words[pos + 2..end].chunks_exact(stride).enumerate() {
            let d = f32::from_bits(px[stride - 1]);
            if !d.is_finite() || d == BACKGROUND_DEPTH {
                return corrupt(format!(
                    "active pixel {} of the run at byte {} has depth {d}; active depths are finite and not 1.0",
                    k,
                    pos * 4
                ));
            }
        }
        total += inactive as u64 + active as u64;
        if total > pixels as u64 {
            return corrupt(format!("runs cover more than the {pixels} pixels of the image"));
        }
        headers += 1;
        pos = end;
    }
    if total != pixels as u64 {
        return corrupt(format!("runs cover {total} pixels but the image has {pixels}"));
    }
    Ok(())
}

/// Builds a canonical payload from pushed inactive counts and active pixels.
pub struct ApWriter {
    words: Vec<u32>,
    pending_inactive: u32,
    /// Index of the header of the active run being extended, if the last push was active.
    open: Option<usize>,
    /// Words per active pixel.
    stride: usize,
}

impl Default for ApWriter {
    fn default() -> ApWriter {
        ApWriter::with_capacity(0)
    }
}

impl ApWriter {
    /// A writer of RGBA8 payloads.
    pub fn with_capacity(words: usize) -> ApWriter {
        ApWriter::of(words, PIXEL_WORDS)
    }

    /// A writer of payloads of `stride` words per active pixel.
    pub fn of(words: usize, stride: usize) -> ApWriter {
        ApWriter { words: Vec::with_capacity(words), pending_inactive: 0, open: None, stride }
    }

    /// Appends `n` inactive pixels.
    pub fn push_inactive(&mut self, n: u32) {
        if n > 0 {
            self.open = None;
            self.pending_inactive += n;
        }
    }

    /// Appends active pixels given as their words (colour, depth bits), `stride` a pixel.
    pub fn push_active(&mut self, pixel_words: &[u32]) {
        if pixel_words.is_empty() {
            return;
        }
        self.extend_run(pixel_words.len() / self.stride);
        self.words.extend_from_slice(pixel_words);
    }

    /// Appends `pixels` active pixels whose words the caller writes into the slice returned
    /// (zeroed).
    pub fn active_mut(&mut self, pixels: usize) -> &mut [u32] {
        if pixels > 0 {
            self.extend_run(pixels);
        }
        let at = self.words.len();
        self.words.resize(at + self.stride * pixels, 0);
        &mut self.words[at..]
    }

    /// Counts `pixels` more active pixels in the open run's header, opening a run after the
    /// pending inactive pixels where none is open.
    fn extend_run(&mut self, pixels: usize) {
        let header = match self.open {
            Some(h) => h,
            None => {
                self.words.extend_from_slice(&[self.pending_inactive, 0]);
                self.pending_inactive = 0;
                let h = self.words.len() - 2;
                self.open = Some(h);
                h
            }
        };
        self.words[header + 1] += pixels as u32;
    }

    /// Words per active pixel.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Appends every run of another payload.
    pub fn push_runs(&mut self, words: &[u32]) {
        for run in runs_of(words, self.stride) {
            self.push_inactive(run.inactive);
            self.push_active(run.pixels);
        }
    }

    /// The finished payload (a trailing inactive run becomes `(count, 0)`).
    pub fn finish(mut self) -> Vec<u32> {
        if self.pending_inactive > 0 {
            self.words.extend_from_slice(&[self.pending_inactive, 0]);
        }
        self.words
    }
}

impl ApImage {
    /// Checks the payload against the header's size.
    pub fn new(width: u32, height: u32, background: [u8; 4], encoded: Encoded) -> Result<ApImage> {
        let pixels = pixel_count(width, height)?;
        if encoded.pixels != pixels {
            return Err(CompositeError::HeaderSize { pixels: encoded.pixels, width, height });
        }
        validate(&encoded.words, pixels)?;
        Ok(ApImage { width, height, background, encoded })
    }

    /// The file bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + self.encoded.bytes());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.width.to_le_bytes());
        out.extend_from_slice(&self.height.to_le_bytes());
        out.extend_from_slice(&self.background);
        out.extend_from_slice(&(self.encoded.bytes() as u64).to_le_bytes());
        for w in &self.encoded.words {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// Parses and fully validates file bytes; `path` names the file in errors.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<ApImage> {
        ApImage::read_from(&mut &bytes[..], bytes.len() as u64, path)
    }

    /// Reads a `.ap` file (regular files only; see [`ApImage::read_from`] for the checks).
    pub fn read(path: &Path) -> Result<ApImage> {
        let (file, len) = kit::input::open_regular(path)?;
        ApImage::read_from(&mut std::io::BufReader::new(file), len, path)
    }

    /// Reads a `.ap` of `len` bytes from `reader`. Every header value is checked before
    /// anything is allocated: the magic, the version, the size (at most 2^32 - 1 pixels),
    /// the payload length against the bytes present and against the largest canonical
    /// payload of that many pixels, and the payload plus the decoded image
    /// ([`DECODED_BYTES_PER_PIXEL`]) against the memory budget. Then every run is checked
    /// ([`validate`]).
    pub fn read_from(reader: &mut impl Read, len: u64, path: &Path) -> Result<ApImage> {
        let bad = |m: String| CompositeError::BadFile { path: path.to_path_buf(), message: m };
        if len < HEADER_BYTES as u64 {
            return Err(bad(format!("{len} bytes is shorter than the {HEADER_BYTES}-byte header")));
        }
        let mut head = [0u8; HEADER_BYTES];
        reader.read_exact(&mut head).map_err(|e| bad(format!("cannot read the header: {e}")))?;
        if &head[0..4] != MAGIC {
            return Err(bad(format!("magic is {:?}, expected \"TSAP\"", String::from_utf8_lossy(&head[0..4]))));
        }
        let u32_at = |o: usize| u32::from_le_bytes([head[o], head[o + 1], head[o + 2], head[o + 3]]);
        let version = u32_at(4);
        if version != VERSION {
            return Err(bad(format!("version {version}, this build reads version {VERSION}")));
        }
        let (width, height) = (u32_at(8), u32_at(12));
        let background = [head[16], head[17], head[18], head[19]];
        let mut len_bytes = [0u8; 8];
        len_bytes.copy_from_slice(&head[20..28]);
        let payload_len = u64::from_le_bytes(len_bytes);
        let actual = len - HEADER_BYTES as u64;
        if payload_len != actual {
            return Err(bad(format!("header says the payload has {payload_len} bytes, the file holds {actual}")));
        }
        if payload_len % 8 != 0 {
            return Err(bad(format!("payload length {payload_len} is not a multiple of 8")));
        }
        let pixels = pixel_count(width, height).map_err(|e| bad(e.to_string()))?;
        let largest = max_payload_bytes(pixels);
        if payload_len > largest {
            return Err(bad(format!(
                "a payload of {payload_len} bytes for {width}x{height} pixels; a canonical one holds at most {largest}"
            )));
        }
        kit::budget::check(
            payload_len + pixels as u64 * DECODED_BYTES_PER_PIXEL,
            format!("the {width}x{height} Active Pixel image {}", path.display()),
        )?;
        let mut words = Vec::with_capacity((payload_len / 4) as usize);
        let mut chunk = vec![0u8; (payload_len as usize).min(1 << 16)];
        let mut left = payload_len as usize;
        while left > 0 {
            let bytes = &mut chunk[..left.min(1 << 16)];
            reader.read_exact(bytes).map_err(|e| bad(format!("cannot read the payload: {e}")))?;
            words.extend(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
            left -= bytes.len();
        }
        validate(&words, pixels).map_err(|e| bad(e.to_string()))?;
        Ok(ApImage { width, height, background, encoded: Encoded { pixels, words } })
    }

    /// Writes a `.ap` file atomically.
    pub fn write(&self, path: &Path) -> Result<()> {
        Ok(kit::output::write_bytes(path, &self.to_bytes())?)
    }

    /// Like [`ApImage::write`], into `staged` (all or none with the command's other outputs).
    pub fn stage(&self, staged: &mut kit::output::Staged, path: &Path) -> Result<()> {
        Ok(staged.write_bytes(path, &self.to_bytes())?)
    }
}

/// The largest canonical payload of `pixels` pixels, in bytes: every run but the first has at
/// least one inactive pixel, so there are at most (inactive pixels + 1) run headers of 8
/// bytes, and 8 bytes per active pixel: 8 * (pixels + 1) in all.
pub fn max_payload_bytes(pixels: usize) -> u64 {
    8 * (pixels as u64 + 1)
}

/// `width * height`, refusing empty images and sizes whose run counts would not fit a u32.
pub fn pixel_count(width: u32, height: u32) -> Result<usize> {
    let n = width as u64 * height as u64;
    if n == 0 || n > u32::MAX as u64 {
        return Err(CompositeError::ImageSize { width, height });
    }
    Ok(n as usize)
}

/// Packs RGBA8 bytes into the colour word (R in the low byte).
pub fn pack_rgba(c: [u8; 4]) -> u32 {
    u32::from_le_bytes(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn px(c: u32, d: f32) -> [u32; 2] {
        [c, d.to_bits()]
    }

    #[test]
    fn writer_builds_canonical_runs() {
        let mut w = ApWriter::default();
        w.push_active(&px(1, 0.5));
        w.push_active(&px(2, 0.25));
        w.push_inactive(3);
        w.push_inactive(2);
        w.push_active(&px(3, 0.1));
        w.push_inactive(4);
        let words = w.finish();
        let mut want = vec![0, 2, 1, 0.5f32.to_bits(), 2, 0.25f32.to_bits(), 5, 1, 3, 0.1f32.to_bits(), 4, 0];
        assert_eq!(words, want);
        validate(&words, 12).unwrap();
        assert!(validate(&words, 13).is_err());
        want[10] = 0;
        assert!(validate(&want, 8).is_err(), "(0, 0) run must be refused");
    }

    #[test]
    fn file_round_trip_and_bad_headers() {
        let p = Path::new("x.ap");
        let img = ApImage::new(3, 1, [1, 2, 3, 4], Encoded { pixels: 3, words: vec![1, 1, 7, 0.5f32.to_bits(), 1, 0] })
            .unwrap();
        let bytes = img.to_bytes();
        assert_eq!(ApImage::from_bytes(&bytes, p).unwrap(), img);
        for cut in [0, 10, HEADER_BYTES, bytes.len() - 1, bytes.len() - 4] {
            assert!(ApImage::from_bytes(&bytes[..cut], p).is_err(), "cut at {cut}");
        }
        let mut wrong_magic = bytes.clone();
        wrong_magic[0] = b'X';
        assert!(ApImage::from_bytes(&wrong_magic, p).is_err());
        let mut wrong_size = bytes.clone();
        wrong_size[8] = 4;
        assert!(ApImage::from_bytes(&wrong_size, p).unwrap_err().to_string().contains("cover"));
        let mut inactive_depth = bytes.clone();
        inactive_depth[HEADER_BYTES + 12..HEADER_BYTES + 16].copy_from_slice(&1.0f32.to_le_bytes());
        assert!(ApImage::from_bytes(&inactive_depth, p).is_err());
    }
}
