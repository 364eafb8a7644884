//! A whole `.lfc` file in memory ([`Compressed`]): written with every section compressed
//! in parallel, read with every section parsed in parallel. [`crate::sections`] has the
//! file layout and the per-section streams; docs/formats.md the bytes.

use std::ops::Range;
use std::path::Path;

pub use crate::bytes::LFC_MAGIC;
use crate::codes::{Codes, Params};
use crate::dictionary::Ensemble;
use crate::error::{LfError, Result};
use crate::patch::PatchGrid;
use crate::sections::{self, Bounds, Fields, Frame, SectionOut, SECTION_PATCHES};
pub use crate::sections::{Header, HEADER_LEN, LFC_VERSION, LFC_VERSION_STEP_EPSILON, LFC_VERSION_ZSTD};

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

    /// Serialises to `.lfc` bytes, the sections compressed in parallel. Per-patch success
    /// flags and errors are encoder statistics and are not stored. Refuses what the reader
    /// would refuse (parameters out of range, sizes beyond 32 bits), so no file is written
    /// that cannot be read back.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        use rayon::prelude::*;
        let fields = self.fields()?;
        let n = self.codes.len();
        let mut frames = vec![sections::ensemble_frame(&self.ensemble)?];
        let starts: Vec<usize> = (0..n).step_by(SECTION_PATCHES).collect();
        let bounds = self.bounds();
        let ranged = sections::version_ranges(fields.version).then_some(&bounds);
        let coded: Vec<Frame> = starts
            .into_par_iter()
            .map(|s| sections::section_frame(&self.codes, s..(s + SECTION_PATCHES).min(n), s, ranged))
            .collect::<Result<_>>()?;
        frames.extend(coded);
        sections::assemble(fields, &frames)
    }

    /// The `.lfc` bytes of `self` whose sections were already compressed, in patch order,
    /// into `frames` (the encoder does this while the GPU works).
    pub fn to_bytes_from(&self, frames: Vec<Frame>) -> Result<Vec<u8>> {
        let fields = self.fields()?;
        let coefficients: u64 = frames.iter().map(|f| f.entry.coefficients).sum();
        if coefficients != fields.coefficients {
            return Err(LfError::SectionCoefficients { held: coefficients, coefficients: fields.coefficients });
        }
        let mut all = Vec::with_capacity(frames.len() + 1);
        all.push(sections::ensemble_frame(&self.ensemble)?);
        all.extend(frames);
        sections::assemble(fields, &all)
    }

    /// What the sections are coded against (and the reader checks them against).
    pub fn bounds(&self) -> Bounds {
        Bounds::new(self.grid(), self.step, &self.ensemble, self.params.sparsity)
    }

    /// Checks what the reader checks of the parameters; returns the header's words.
    fn fields(&self) -> Result<Fields> {
        self.params.check(self.ensemble.shape.len())?;
        // A file read from version 2 is written back as version 2 (its levels are at its step).
        let version = [sections::LFC_VERSION, sections::LFC_VERSION_STEP_EPSILON]
            .into_iter()
            .find(|&v| sections::version_step(v, self.params.epsilon) == Some(self.step))
            .ok_or(LfError::Step { step: self.step })?;
        let mut size = [0u32; 4];
        for (s, &d) in size.iter_mut().zip(&self.size) {
            *s = u32::try_from(d).map_err(|_| LfError::SizeBeyond32Bits { size: self.size })?;
        }
        Ok(Fields {
            version,
            size,
            sparsity: self.params.sparsity as u32,
            epsilon: self.params.epsilon,
            step: self.step,
            patches: self.codes.len() as u64,
            coefficients: self.codes.locations.len() as u64,
        })
    }

    /// Parses and checks `.lfc` bytes: the header and section table ([`Header::parse`]),
    /// the ensemble, then every section in parallel (checksum, one zstd frame with its
    /// content size and checksum, every index and level against its range); see
    /// docs/formats.md. A file this accepts decodes to finite samples.
    pub fn from_bytes(bytes: &[u8]) -> Result<Compressed> {
        let (header, bounds, ensemble) = open(bytes)?;
        let params = Params { sparsity: header.sparsity as usize, epsilon: header.epsilon };
        let codes = read_sections(&header, bytes, &bounds, 0..header.sections())?;
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

/// The codes of sections `sections` alone (patches `header.section(first).start` on),
/// every one decompressed and parsed in parallel; the other frames are not touched.
/// Success flags and errors are not stored: every patch reads as a success.
pub fn read_sections(header: &Header, bytes: &[u8], bounds: &Bounds, sections: Range<usize>) -> Result<Codes> {
    use rayon::prelude::*;
    let ranges: Vec<Range<usize>> = sections.clone().map(|s| header.section(s)).collect();
    let n: usize = ranges.iter().map(|r| r.len()).sum();
    let count = ranges.len();
    let coefficients: Vec<usize> =
        header.entries[sections.start + 1..sections.end + 1].iter().map(|e| e.coefficients as usize).collect();
    let total = coefficients.iter().sum();
    // Sized by the header, whose totals were checked against the budget.
    let mut membership = vec![0u32; n];
    let mut local = vec![0u32; n + count];
    let mut locations = vec![0u32; total];
    let mut levels = vec![0i32; total];
    let outs = sections::split_lens(&mut membership, ranges.iter().map(|r| r.len()))
        .into_iter()
        .zip(sections::split_lens(&mut local, ranges.iter().map(|r| r.len() + 1)))
        .zip(sections::split_lens(&mut locations, coefficients.iter().copied()))
        .zip(sections::split_lens(&mut levels, coefficients.iter().copied()));
    let outs: Vec<SectionOut> = outs
        .map(|(((membership, offsets), locations), levels)| SectionOut { membership, offsets, locations, levels })
        .collect();
    outs.into_par_iter()
        .zip(sections)
        .try_for_each(|(out, s)| sections::parse_section(header, bytes, s, bounds, out))?;
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0);
    let (mut base, mut at) = (0, 0);
    for (r, c) in ranges.iter().zip(&coefficients) {
        let section = &local[at..at + r.len() + 1];
        offsets.extend(section[1..].iter().map(|&o| base + o as usize));
        base += c;
        at += r.len() + 1;
    }
    Ok(Codes { membership, success: vec![true; n], errors: vec![0.0; n], offsets, locations, levels })
}

/// The header, the bounds every section is checked against, and the ensemble of `.lfc`
/// bytes: the parameters checked as the encoder checks them, the patch count against the
/// size and the patch shape. The CPU reader and the decode to device share it.
pub fn open(bytes: &[u8]) -> Result<(Header, Bounds, Ensemble)> {
    let header = Header::parse(bytes)?;
    let ensemble = header.ensemble(bytes)?;
    let bad = |m: String| LfError::corrupt("light-field bitstream", m);
    let params = Params { sparsity: header.sparsity as usize, epsilon: header.epsilon };
    params.check(ensemble.shape.len()).map_err(|e| bad(e.to_string()))?;
    let step = sections::version_step(header.version, params.epsilon).expect("a version the header accepted");
    if header.step != step {
        return Err(bad(format!(
            "quantisation step {:e} is not {:e} (epsilon {:e} in version {})",
            header.step, step, header.epsilon, header.version
        )));
    }
    let [u, v, h, w] = header.size;
    let grid = PatchGrid::new(ensemble.shape, u, v, h, w);
    if header.patches != grid.len() as u64 {
        return Err(bad(format!(
            "header says {} patches, the size and patch shape give {}",
            header.patches,
            grid.len()
        )));
    }
    let bounds = Bounds::new(grid, header.step, &ensemble, params.sparsity);
    Ok((header, bounds, ensemble))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bytes::fnv1a64;
    use crate::sections::{max_level, RANGED_MOST_SHARE};

    /// Random valid codes for a light field of 1 x 1 views of `h` x `w` pixels in 2 x 2
    /// pixel patches (12 samples), K = 3: as many patches as a test wants, cheaply.
    pub fn random_compressed(h: usize, w: usize, seed: u64) -> Compressed {
        use rand::{Rng, SeedableRng};
        let shape = crate::patch::PatchShape { my: 2, mx: 2, mu: 1, mv: 1 };
        let ensemble = Ensemble::random(shape, 3, seed);
        let params = Params { sparsity: 6, epsilon: 0.05 };
        let grid = PatchGrid::new(shape, 1, 1, h, w);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut codes = Codes { offsets: vec![0], ..Default::default() };
        for p in 0..grid.len() {
            codes.membership.push(rng.gen_range(0..3));
            let mut locs: Vec<u32> = (0..12).filter(|_| rng.gen_bool(0.4)).take(6).collect();
            locs.sort();
            let bound = max_level(params.base_step(), grid.valid_samples(p), 12) as i32;
            // Non-zero levels, as the encoders keep, so sections may be range coded.
            let level = |rng: &mut rand_chacha::ChaCha8Rng| rng.gen_range(1..=bound / 4) * [-1, 1][rng.gen_range(0..2)];
            codes.levels.extend(locs.iter().map(|_| level(&mut rng)));
            codes.locations.extend(locs);
            codes.offsets.push(codes.locations.len());
            codes.success.push(true);
            codes.errors.push(0.0);
        }
        Compressed { size: [1, 1, h, w], params, step: params.base_step(), ensemble, codes }
    }

    #[test]
    fn sections_round_trip_at_awkward_counts() {
        // One short section, exactly one full one, two with the last short, three.
        for (h, w, sections) in [(10, 10, 1), (64, 64, 1), (70, 64, 2), (80, 120, 3)] {
            let c = random_compressed(h, w, h as u64);
            let bytes = c.to_bytes().unwrap();
            let header = Header::parse(&bytes).unwrap();
            assert_eq!(header.sections(), sections, "{h}x{w}");
            assert_eq!(Compressed::from_bytes(&bytes).unwrap(), c, "{h}x{w}");
        }
    }

    #[test]
    fn damaged_tables_and_frames_and_version_1_are_refused_clearly() {
        let c = random_compressed(70, 64, 1);
        let bytes = c.to_bytes().unwrap();
        let refused = |b: &[u8]| Compressed::from_bytes(b).unwrap_err().to_string();
        let mut bad = bytes.clone();
        bad[HEADER_LEN + 40] ^= 1;
        assert!(refused(&bad).contains("section table checksum mismatch"), "{}", refused(&bad));
        // A table entry changed and its hash fixed: a payload no frame can hold.
        let table_len = 3 * sections::ENTRY_LEN;
        let mut bad = bytes.clone();
        let at = HEADER_LEN + sections::ENTRY_LEN + 8;
        bad[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        let sum = fnv1a64(&bad[HEADER_LEN..HEADER_LEN + table_len]);
        bad[HEADER_LEN + table_len..HEADER_LEN + table_len + 8].copy_from_slice(&sum.to_le_bytes());
        assert!(refused(&bad).contains("section table entry 1"), "{}", refused(&bad));
        let mut bad = bytes.clone();
        let last = bad.len() - 5;
        bad[last] ^= 0x40;
        assert!(refused(&bad).contains("frame 2: checksum mismatch"), "{}", refused(&bad));
        let mut old = bytes.clone();
        old[4..8].copy_from_slice(&1u32.to_le_bytes());
        assert!(refused(&old).contains("version 1"), "{}", refused(&old));
        for cut in [0, 7, HEADER_LEN, HEADER_LEN + 20, bytes.len() - 1] {
            assert!(Compressed::from_bytes(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn the_breakdown_accounts_for_every_fixed_byte_and_each_stream() {
        let c = random_compressed(70, 64, 5);
        let bytes = c.to_bytes().unwrap();
        let header = Header::parse(&bytes).unwrap();
        let b = sections::Breakdown::new(&header, &bytes, &c.codes, &c.grid()).unwrap();
        assert!(b.range_coded_sections > 0, "random non-zero levels range code smaller");
        assert_eq!(b.header + b.table + b.dictionaries + b.sections, bytes.len() as u64);
        let mut s = sections::Streams::default();
        s.push(&c.codes, 0..c.codes.len());
        let raw = b.raw;
        assert_eq!((raw.membership + raw.counts + raw.locations + raw.levels) as usize, s.len());
        assert_eq!(raw.membership, c.codes.len() as u64, "K = 3: one byte a patch");
        assert!(b.compressed_alone.levels > 0 && b.compressed_alone.locations > 0);
        // 70 x 64 pixels in 2 x 2 patches: no padding.
        assert_eq!((b.padded_patches, b.coded_over_real_samples), (0, 1.0));
        let odd = random_compressed(71, 64, 5);
        let odd_bytes = odd.to_bytes().unwrap();
        let b =
            sections::Breakdown::new(&Header::parse(&odd_bytes).unwrap(), &odd_bytes, &odd.codes, &odd.grid()).unwrap();
        assert_eq!(b.padded_patches, 32);
        let held: usize = (odd.codes.len() - 32..odd.codes.len()).map(|p| odd.codes.count(p)).sum();
        assert_eq!(b.padded_patch_coefficients, held as u64);
    }

    #[test]
    fn version_5_range_codes_sections_and_version_4_files_still_read() {
        let c = random_compressed(80, 120, 7);
        let bytes = c.to_bytes().unwrap();
        let header = Header::parse(&bytes).unwrap();
        assert_eq!(header.version, LFC_VERSION);
        let ranged = (0..header.sections())
            .filter(|&s| header.section_frame(&bytes, s).1.starts_with(sections::RANGED_MAGIC))
            .count();
        assert!(ranged > 0, "no section was range coded");
        assert_eq!(Compressed::from_bytes(&bytes).unwrap(), c);
        // The same codes as version 4 wrote them (every section zstd) read back alike.
        let mut frames = vec![sections::ensemble_frame(&c.ensemble).unwrap()];
        let n = c.codes.len();
        for s in (0..n).step_by(SECTION_PATCHES) {
            frames.push(sections::section_frame(&c.codes, s..(s + SECTION_PATCHES).min(n), s, None).unwrap());
        }
        let v4 = sections::assemble(Fields { version: LFC_VERSION_ZSTD, ..c.fields().unwrap() }, &frames).unwrap();
        assert_eq!(Header::parse(&v4).unwrap().version, LFC_VERSION_ZSTD);
        assert_eq!(Compressed::from_bytes(&v4).unwrap(), c);
        assert!(bytes.len() < v4.len(), "range coding chosen only where smaller: {} >= {}", bytes.len(), v4.len());
        // Version 4 holds no range-coded section.
        let refused = Compressed::from_bytes(&with_version(&bytes, LFC_VERSION_ZSTD)).unwrap_err().to_string();
        assert!(refused.contains("not one zstd frame"), "{refused}");
    }

    #[test]
    fn the_trial_keeps_every_section_that_range_coding_clearly_wins() {
        // Sections of 1024 patches get a trial on an eighth of them first; where coding the
        // whole section is clearly under the share that wins, the trial must not stop it.
        let mut checked = 0;
        for seed in 0..4 {
            let c = random_compressed(96, 88, seed);
            let b = c.bounds();
            let n = c.codes.len();
            for s in (0..n).step_by(SECTION_PATCHES) {
                let range = s..(s + SECTION_PATCHES).min(n);
                let chosen = sections::section_frame(&c.codes, range.clone(), s, Some(&b)).unwrap();
                let zstd = sections::section_frame(&c.codes, range.clone(), s, None).unwrap();
                let full = sections::range_coded(&c.codes, range.clone().zip(range.clone()), &b).unwrap().len();
                let full = (full + sections::RANGED_MAGIC.len()) as f64;
                if range.len() == SECTION_PATCHES && full <= 0.97 * RANGED_MOST_SHARE * zstd.entry.frame_len as f64 {
                    assert!(chosen.bytes.starts_with(sections::RANGED_MAGIC), "seed {seed}, section at {s}");
                    assert_eq!(chosen.entry.frame_len as f64, full);
                    checked += 1;
                }
            }
        }
        assert!(checked > 0, "no full section that range coding wins");
    }

    #[test]
    fn damaged_range_coded_sections_are_refused_never_misread() {
        let c = random_compressed(64, 64, 9);
        let bytes = c.to_bytes().unwrap();
        let header = Header::parse(&bytes).unwrap();
        let (entry, frame) = header.section_frame(&bytes, 0);
        assert!(frame.starts_with(sections::RANGED_MAGIC));
        let (start, entry) = (header.starts[1], *entry);
        let at = HEADER_LEN + sections::ENTRY_LEN;
        let mut rng = kit::fuzz::Rng::new(5);
        let (mut refused, mut accepted) = (0, 0);
        for _ in 0..200 {
            // A byte of the coded stream changed, the frame's checksum and the table's hash fixed.
            let mut bad = bytes.clone();
            let i = start + sections::RANGED_MAGIC.len() + 1 + rng.below(entry.frame_len as usize - 5);
            bad[i] ^= 1 << rng.below(8);
            let sum = sections::hash64(&bad[start..start + entry.frame_len as usize]);
            bad[at + 24..at + 32].copy_from_slice(&sum.to_le_bytes());
            let table = 2 * sections::ENTRY_LEN;
            let hash = fnv1a64(&bad[HEADER_LEN..HEADER_LEN + table]);
            bad[HEADER_LEN + table..HEADER_LEN + table + 8].copy_from_slice(&hash.to_le_bytes());
            // A change in the coder's last bytes may leave every decision as it was.
            match Compressed::from_bytes(&bad) {
                Ok(_) => accepted += 1,
                Err(e) => {
                    refused += 1;
                    assert!(e.to_string().contains("range-coded"), "{e}");
                }
            }
        }
        assert!(refused > 100, "{refused} refused, {accepted} accepted");
    }

    /// The header with its version set to `version` and its hash fixed.
    fn with_version(bytes: &[u8], version: u32) -> Vec<u8> {
        let mut b = bytes.to_vec();
        b[4..8].copy_from_slice(&version.to_le_bytes());
        let sum = fnv1a64(&b[..HEADER_LEN - 8]);
        b[HEADER_LEN - 8..HEADER_LEN].copy_from_slice(&sum.to_le_bytes());
        b
    }

    #[test]
    fn version_2_files_read_at_their_step_and_each_version_holds_its_own() {
        let c = random_compressed(70, 64, 3);
        let bytes = c.to_bytes().unwrap();
        let header = Header::parse(&bytes).unwrap();
        assert_eq!((header.version, header.step), (LFC_VERSION, c.params.epsilon * crate::codes::STEP_PER_EPSILON));
        // A version 2 file (step = epsilon) reads, and is written back byte for byte.
        let old = Compressed { step: c.params.epsilon * crate::codes::STEP_PER_EPSILON_V2, ..c.clone() };
        let old_bytes = old.to_bytes().unwrap();
        assert_eq!(Header::parse(&old_bytes).unwrap().version, LFC_VERSION_STEP_EPSILON);
        let back = Compressed::from_bytes(&old_bytes).unwrap();
        assert_eq!(back, old);
        assert_eq!(back.to_bytes().unwrap(), old_bytes);
        // Each version's step is the only one it holds; version 3 (dropped) is refused.
        let refused = |b: &[u8]| Compressed::from_bytes(b).unwrap_err().to_string();
        let swapped = with_version(&bytes, LFC_VERSION_STEP_EPSILON);
        assert!(refused(&swapped).contains("quantisation step"), "{}", refused(&swapped));
        let swapped = with_version(&old_bytes, LFC_VERSION);
        assert!(refused(&swapped).contains("quantisation step"), "{}", refused(&swapped));
        let v3 = with_version(&bytes, 3);
        assert!(refused(&v3).contains("version 3"), "{}", refused(&v3));
        // The writer refuses a step of neither version.
        let odd = Compressed { step: c.params.epsilon * 1.5, ..c };
        assert!(matches!(odd.to_bytes(), Err(LfError::Step { .. })));
    }
}
