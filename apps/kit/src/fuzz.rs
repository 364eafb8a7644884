//! Mutation testing of readers (docs/formats.md, "What readers check"): every reader's test
//! takes valid files, mutates them with a fixed seed (truncation at every offset of small
//! files, bit flips, header words set to 0, 1, 2^31, 2^32, 2^63, NaN and Inf), runs the reader
//! in-process, and asserts an `Ok` or a typed error, never a panic, and never an allocation
//! above the budget ([`CountingAllocator`], declared as the test binary's global allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The generator mutation runs draw from (fixed seeds, so a run repeats exactly).
pub use crate::rng::Rng;

/// A global allocator that records the largest single allocation asked for, so a test can
/// assert that no mutated file made a reader ask for more than the budget. Declare it in the
/// test binary:
/// `#[global_allocator] static ALLOC: kit::fuzz::CountingAllocator = kit::fuzz::CountingAllocator::new();`
pub struct CountingAllocator {
    largest: AtomicUsize,
    limit: AtomicUsize,
}

impl CountingAllocator {
    pub const fn new() -> Self {
        CountingAllocator { largest: AtomicUsize::new(0), limit: AtomicUsize::new(usize::MAX) }
    }

    /// Refuses (returns null, which aborts the process with a clear message) any single
    /// allocation above `bytes`: a reader that skips its budget check fails its test loudly.
    pub fn set_limit(&self, bytes: usize) {
        self.limit.store(bytes, Ordering::SeqCst);
    }

    /// The largest single allocation since the last [`CountingAllocator::reset`].
    pub fn largest(&self) -> usize {
        self.largest.load(Ordering::SeqCst)
    }

    pub fn reset(&self) {
        self.largest.store(0, Ordering::SeqCst);
    }

    fn record(&self, size: usize) -> bool {
        self.largest.fetch_max(size, Ordering::Relaxed);
        size <= self.limit.load(Ordering::Relaxed)
    }
}

impl Default for CountingAllocator {
    fn default() -> Self {
        Self::new()
    }
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !self.record(layout.size()) {
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !self.record(layout.size()) {
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !self.record(new_size) {
            return std::ptr::null_mut();
        }
        System.realloc(ptr, layout, new_size)
    }
}

/// The words a header field is set to: sizes at the edges of 32 and 64 bits, and the
/// float specials.
pub const SPECIAL_WORDS: [u64; 9] = [
    0,
    1,
    2,
    1 << 31,
    1 << 32,
    1 << 63,
    u64::MAX,
    0x7FC0_0000, // f32 NaN
    0x7F80_0000, // f32 +Inf
];

/// Mutants of `valid`: every truncation when the file is at most `truncate_all` bytes (else
/// `count` random ones), then `count` random bit flips, and every special word written at
/// every 4-byte-aligned offset of the first `header` bytes (as u32 and as u64 where it fits).
pub fn mutants(valid: &[u8], header: usize, count: usize, truncate_all: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    if valid.len() <= truncate_all {
        out.extend((0..valid.len()).map(|n| valid[..n].to_vec()));
    } else {
        out.extend((0..count).map(|_| valid[..rng.below(valid.len())].to_vec()));
    }
    for _ in 0..count {
        let mut m = valid.to_vec();
        if !m.is_empty() {
            let bit = rng.below(m.len() * 8);
            m[bit / 8] ^= 1 << (bit % 8);
        }
        out.push(m);
    }
    for offset in (0..header.min(valid.len())).step_by(4) {
        for &word in &SPECIAL_WORDS {
            if offset + 4 <= valid.len() {
                let mut m = valid.to_vec();
                m[offset..offset + 4].copy_from_slice(&(word as u32).to_le_bytes());
                out.push(m);
            }
            if offset + 8 <= valid.len() {
                let mut m = valid.to_vec();
                m[offset..offset + 8].copy_from_slice(&word.to_le_bytes());
                out.push(m);
            }
        }
    }
    out
}

/// A JPEG with an APP1 EXIF segment holding one Orientation tag inserted after its SOI
/// marker: the input of every test that photos taken sideways are processed upright.
pub fn with_exif_orientation(jpeg: &[u8], orientation: u16) -> Vec<u8> {
    let mut tiff = b"MM\0\x2a\0\0\0\x08".to_vec(); // big endian, IFD at 8
    tiff.extend_from_slice(&1u16.to_be_bytes()); // one entry
    tiff.extend_from_slice(&0x0112u16.to_be_bytes()); // Orientation
    tiff.extend_from_slice(&3u16.to_be_bytes()); // SHORT
    tiff.extend_from_slice(&1u32.to_be_bytes()); // count
    tiff.extend_from_slice(&orientation.to_be_bytes());
    tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]); // padding, no next IFD
    let mut app1 = b"Exif\0\0".to_vec();
    app1.extend_from_slice(&tiff);
    let mut out = jpeg[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&((app1.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(&app1);
    out.extend_from_slice(&jpeg[2..]);
    out
}

/// The outcome counts of one reader's mutation run, printed in the test summary.
#[derive(Debug, Default)]
pub struct Tally {
    pub cases: usize,
    pub accepted: usize,
    pub refused: usize,
}

/// Runs `read` on every mutant of `valid` (written to a file in a temporary folder, named
/// `name`) and returns the tally; a panic fails the calling test, naming the case.
pub fn run_file_reader<T, E: std::fmt::Display>(
    name: &str,
    mutants: &[Vec<u8>],
    read: impl Fn(&std::path::Path) -> Result<T, E>,
) -> Tally {
    let (_dir, path) = crate::testing::temp_path(name);
    let mut tally = Tally::default();
    for (i, bytes) in mutants.iter().enumerate() {
        std::fs::write(&path, bytes).expect("write mutant");
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read(&path).is_ok()));
        match outcome {
            Ok(true) => tally.accepted += 1,
            Ok(false) => tally.refused += 1,
            Err(_) => panic!("{name}: mutant {i} ({} bytes) made the reader panic", bytes.len()),
        }
        tally.cases += 1;
    }
    let line = format!("fuzz {name}: {} cases, {} accepted, {} refused", tally.cases, tally.accepted, tally.refused);
    println!("{line}");
    log_line(&line);
    tally
}

/// Appends `line` to the file `TESSERA_FUZZ_LOG` names, if any: libtest hides a passing
/// test's output, so tools/test.sh collects the case counts there for the test summary.
fn log_line(line: &str) {
    use std::io::Write;
    if let Some(path) = std::env::var_os("TESSERA_FUZZ_LOG") {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(f, "{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_and_image_readers_survive_mutation() {
        let (dir, npy) = crate::testing::temp_path("a.npy");
        crate::npy::write_f32(&npy, &[3, 5], &[0.25; 15]).unwrap();
        let bytes = std::fs::read(&npy).unwrap();
        let cases = mutants(&bytes, 80, 200, 256, 7);
        let t = run_file_reader("a.npy", &cases, crate::npy::read);
        assert_eq!(t.cases, cases.len());
        assert!(t.refused > 0 && t.accepted > 0, "{t:?}");
        let png = dir.path().join("a.png");
        crate::image::save_rgb8(&png, 7, 3, &[90; 63]).unwrap();
        let bytes = std::fs::read(&png).unwrap();
        let cases = mutants(&bytes, 40, 200, 0, 8);
        run_file_reader("a.png", &cases, crate::image::load);
    }
}
