//! Mutation tests of mosaic's readers: the distance matrix `.npy` path of
//! `mosaic solve` and the tile index cache. Every mutant must give `Ok` or a typed error,
//! never a panic, and no single allocation may exceed BOUND (the memory budget set here):
//! a declared size is checked against the bytes present and the budget first.

use std::path::Path;

use mosaic::index::{self, IndexParams};
use mosaic::DistanceMatrix;

#[global_allocator]
static ALLOC: kit::fuzz::CountingAllocator = kit::fuzz::CountingAllocator::new();

/// The memory budget of these tests, and the largest single allocation allowed.
const BOUND: usize = 256 << 20;

fn bounded() {
    kit::budget::set(BOUND as u64);
    ALLOC.set_limit(BOUND);
}

#[test]
fn distance_npy_survives_mutation() {
    bounded();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.npy");
    let values: Vec<f32> = (0..6 * 9).map(|k| (k * 7 % 13) as f32 * 1.5).collect();
    kit::npy::write_f32(&path, &[6, 9], &values).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert!(DistanceMatrix::load_npy(&path).is_ok());
    let cases = kit::fuzz::mutants(&bytes, 128, 400, 512, 17);
    let tally = kit::fuzz::run_file_reader("d.npy", &cases, DistanceMatrix::load_npy);
    assert!(tally.accepted > 0 && tally.refused > 0, "{tally:?}");
    assert!(ALLOC.largest() <= BOUND, "largest allocation {} bytes", ALLOC.largest());
}

fn tile_folder(root: &Path) {
    std::fs::create_dir_all(root.join("sub")).unwrap();
    for (k, name) in ["a.png", "sub/b.png", "sub/c.jpg"].iter().enumerate() {
        let rgb: Vec<u8> = (0..9 * 7 * 3).map(|i| (i * 31 + k * 70) as u8).collect();
        kit::image::save_rgb8(&root.join(name), 9, 7, &rgb).unwrap();
    }
    std::fs::write(root.join("broken.png"), b"\x89PNG not really").unwrap();
}

#[test]
fn tile_cache_survives_mutation() {
    bounded();
    let dir = tempfile::tempdir().unwrap();
    tile_folder(dir.path());
    let params = IndexParams { cells: (2, 2), thumb: (4, 3) };
    let caches = tempfile::tempdir().unwrap();
    index::index(dir.path(), &params, Some(caches.path()), |_| {}).unwrap();
    let cache = params.cache_path(caches.path(), dir.path());
    let valid = index::read_cache(&cache, &params).unwrap();
    assert_eq!((valid.len(), valid.invalid.len()), (4, 0));
    let bytes = std::fs::read(&cache).unwrap();
    let cases = kit::fuzz::mutants(&bytes, 96, 400, 1024, 18);
    let read = |p: &Path| index::read_cache(p, &params);
    let tally = kit::fuzz::run_file_reader("tile-cache", &cases, read);
    assert!(tally.accepted > 0 && tally.refused > 0, "{tally:?}");
    assert!(ALLOC.largest() <= BOUND, "largest allocation {} bytes", ALLOC.largest());
    // Accepted mutants whose features broke were caught entry by entry, never trusted.
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("cache");
    let mut caught = 0;
    for case in &cases {
        std::fs::write(&file, case).unwrap();
        if let Ok(c) = index::read_cache(&file, &params) {
            caught += c.invalid.len();
        }
    }
    println!("fuzz tile-cache: {caught} invalid entries caught in accepted files");
    assert!(caught > 0);
}
