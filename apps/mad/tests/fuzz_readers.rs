//! Mutation tests of mad's readers (docs/formats.md, "mad"): the pairs CSV of `mad batch`
//! and the image-pair loader (PNG, JPEG with EXIF). Every mutant must give `Ok` or a typed
//! error, never a panic, and no single allocation may exceed [`BOUND`] with the memory
//! budget set to it. Fixed seeds; runs in a few seconds.

use mad::synth::{distort, scene, to_u8, Distortion};

#[global_allocator]
static ALLOC: kit::fuzz::CountingAllocator = kit::fuzz::CountingAllocator::new();

/// The memory budget during the run, and the largest single allocation allowed.
const BOUND: usize = 256 << 20;

fn bounded(run: impl FnOnce()) {
    kit::budget::set(BOUND as u64);
    ALLOC.reset();
    run();
    let largest = ALLOC.largest();
    println!(
        "largest single allocation: {} (bound {})",
        kit::units::human(largest as u64),
        kit::units::human(BOUND as u64)
    );
    assert!(largest < BOUND, "an allocation of {largest} bytes");
}

#[test]
fn pairs_csv_survives_mutation() {
    bounded(|| {
        let valid = "\u{feff}ref,dist\r\n# a comment\r\na.png, b.png\r\n\r\nsub/c.png,d.png\n".as_bytes();
        let cases = kit::fuzz::mutants(valid, 48, 400, 256, 17);
        let tally = kit::fuzz::run_file_reader("pairs.csv", &cases, mad::pairs::read);
        assert!(tally.accepted > 0 && tally.refused > 0, "{tally:?}");
    });
}

#[test]
fn image_pair_loader_survives_mutation() {
    let dir = tempfile::tempdir().unwrap();
    let r = scene(48, 40, 4);
    let d = distort(&r, Distortion::Noise(6.0), 1);
    let distorted = dir.path().join("d.png");
    kit::image::save_gray8(&distorted, 48, 40, &to_u8(&d)).unwrap();
    bounded(|| {
        for ext in ["png", "jpg"] {
            let valid = dir.path().join(format!("r.{ext}"));
            kit::image::save_gray8(&valid, 48, 40, &to_u8(&r)).unwrap();
            let bytes = std::fs::read(&valid).unwrap();
            let cases = kit::fuzz::mutants(&bytes, 64, 150, 0, 23);
            let load = |path: &std::path::Path| mad::input::load_pair(path, &distorted, mad::cpu::check_budget);
            let tally = kit::fuzz::run_file_reader(&format!("ref.{ext}"), &cases, load);
            assert!(tally.refused > 0, "{ext}: {tally:?}");
        }
    });
}
