//! Tile libraries of real size: a folder of many small generated photos
//! of assorted sizes is indexed with a progress bar that counts every file, in parallel,
//! within bounded memory (the index keeps thumbnails, never the decoded photos), and with
//! its cache in `$XDG_CACHE_HOME/tessera`, nothing written into the photo folder.
//! `index_2000_photos` runs in CI; `index_10000_photos` is the ignored full-size run
//! (`cargo test --release -p tessera-mosaic --test index_scale -- --ignored --nocapture`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use indicatif::ProgressBar;
use mosaic::index::{default_cache_dir, index_with_progress, IndexParams};
use rayon::prelude::*;

/// Live heap bytes and their peak since the last reset: what the index holds at once, not
/// only its largest allocation (kit::fuzz::CountingAllocator's measure).
struct PeakAllocator {
    live: AtomicUsize,
    peak: AtomicUsize,
}

unsafe impl GlobalAlloc for PeakAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = System.alloc(layout);
        if !ptr.is_null() {
            let live = self.live.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            self.peak.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        self.live.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

impl PeakAllocator {
    /// Starts a new peak from the bytes live now; returns them.
    fn reset(&self) -> usize {
        let live = self.live.load(Ordering::Relaxed);
        self.peak.store(live, Ordering::Relaxed);
        live
    }
}

#[global_allocator]
static ALLOC: PeakAllocator = PeakAllocator { live: AtomicUsize::new(0), peak: AtomicUsize::new(0) };

const PARAMS: IndexParams = IndexParams { cells: (4, 4), thumb: (8, 6) };

/// Photo `k`: 48 to 111 pixels a side (so crops differ), two colours split at a seeded
/// column; returns its size.
fn photo(k: usize) -> (usize, usize, Vec<u8>) {
    let (w, h) = (48 + (k * 37) % 64, 48 + (k * 53) % 64);
    let split = k % w;
    let colour = |x: usize| if x < split { [(k % 251) as u8, 40, 200] } else { [10, (k % 239) as u8, 90] };
    (w, h, (0..w * h).flat_map(|p| colour(p % w)).collect())
}

/// Writes `count` PNGs into `dir`, 500 to a subfolder; returns the bytes all of them take
/// decoded as RGBA8 (what holding every photo at full size would cost).
fn generate(dir: &Path, count: usize) -> usize {
    (0..count)
        .into_par_iter()
        .map(|k| {
            let folder = dir.join(format!("roll{:02}", k / 500));
            std::fs::create_dir_all(&folder).unwrap();
            let (w, h, rgb) = photo(k);
            kit::image::save_rgb8(&folder.join(format!("img{k:05}.png")), w, h, &rgb).unwrap();
            w * h * 4
        })
        .sum()
}

fn files_under(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                files_under(&e.path())
            } else {
                1
            }
        })
        .sum()
}

/// Held for a whole run: the runs set the environment and measure the process's heap.
static SERIAL: Mutex<()> = Mutex::new(());

fn index_library(count: usize) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let photos = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let full_size = generate(photos.path(), count);
    println!("{count} photos generated in {:.0} ms", start.elapsed().as_secs_f64() * 1e3);
    std::env::set_var("XDG_CACHE_HOME", home.path());
    let cache_dir = default_cache_dir().unwrap();
    assert_eq!(cache_dir, home.path().join("tessera"));

    // Two workers, as on the CI machine; indexing must use both.
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let progress = ProgressBar::hidden();
    let before = ALLOC.reset();
    let start = Instant::now();
    let (tiles, stats) = pool
        .install(|| index_with_progress(photos.path(), &PARAMS, Some(&cache_dir), &progress, |w| panic!("{w}")))
        .unwrap();
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let peak = ALLOC.peak.load(Ordering::Relaxed) - before;
    println!(
        "{count} photos ({:.1} MiB decoded at full size) indexed in {ms:.0} ms on {} threads, peak heap {:.1} MiB",
        full_size as f64 / 1048576.0,
        stats.threads,
        peak as f64 / 1048576.0
    );

    assert_eq!((stats.files, stats.decoded, stats.from_cache, stats.skipped), (count, count, 0, 0));
    assert_eq!(tiles.len(), count);
    assert_eq!(tiles.paths[0], "roll00/img00000.png");
    assert_eq!((progress.position(), progress.length()), (count as u64, Some(count as u64)));
    assert_eq!(stats.threads, 2, "decoding ran on {} of 2 worker threads", stats.threads);
    // The index keeps 8 x 6 thumbnails and 4 x 4 features per photo (192 bytes) and the
    // cache entries; decoding holds one photo per thread. An eighth of the full-size bytes
    // is far above that and far below holding every photo.
    assert!(peak < full_size / 8, "peak heap {peak} bytes while indexing; all photos decoded take {full_size}");

    // The cache: one file in $XDG_CACHE_HOME/tessera, none in the photo folder; a second
    // run decodes nothing and counts every file again.
    assert_eq!(files_under(photos.path()), count);
    let cached: Vec<_> = std::fs::read_dir(&cache_dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(cached, [PARAMS.cache_path(&cache_dir, photos.path())]);
    let progress = ProgressBar::hidden();
    let (again, stats) =
        index_with_progress(photos.path(), &PARAMS, Some(&cache_dir), &progress, |w| panic!("{w}")).unwrap();
    assert_eq!((stats.decoded, stats.from_cache, stats.threads), (0, count, 0));
    assert_eq!(progress.position(), count as u64);
    assert_eq!(again.thumbs, tiles.thumbs);
    assert_eq!(files_under(photos.path()), count);
}

#[test]
fn index_2000_photos() {
    index_library(2000);
}

/// The 10,000-photo library of the issue; run with --ignored, in release.
#[test]
#[ignore]
fn index_10000_photos() {
    index_library(10_000);
}
