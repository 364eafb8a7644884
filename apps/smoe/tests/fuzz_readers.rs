//! Mutation tests of smoe's readers (docs/formats.md, "smoe"): the JSON model reader, the
//! binary model reader, the `.smc` reader (mutants as they come, which its CRC refuses, and
//! with the CRC made to match, which the decoder must then survive), and the fit input loader (`Grid::load`: light-field `.npy` and
//! images). Valid files are mutated with fixed seeds (every truncation of small files, bit
//! flips, header words set to the edges of 32/64 bits and the float specials; for JSON, each
//! number replaced by values past f32's range), and every mutant must load or be refused
//! with an error: never a panic, and never one allocation above the 64 MiB memory budget.

use std::path::Path;

use smoe::data::Grid;
use smoe::model::Model;

#[global_allocator]
static ALLOC: kit::fuzz::CountingAllocator = kit::fuzz::CountingAllocator::new();

/// The memory budget the readers run under, and so the bound on any one allocation.
const BUDGET: u64 = 64 << 20;

/// A valid model of `k` kernels: fitted-looking values with correlated covariances.
fn model(p: usize, k: usize) -> Model {
    let d = p + 3;
    let mut rng = kit::fuzz::Rng::new(3);
    let mut unit = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let mut m = Model {
        coord_dims: p,
        color_dims: 3,
        color_space: smoe::model::ColorSpace::Rgb,
        extent: if p == 2 { vec![7, 5] } else { vec![7, 5, 3, 2] },
        pi: Vec::new(),
        mu: Vec::new(),
        cov: Vec::new(),
    };
    for _ in 0..k {
        m.pi.push(0.1 + unit());
        m.mu.extend((0..d).map(|_| unit()));
        for i in 0..d {
            for j in 0..=i {
                m.cov.push(if i == j { 0.02 + 0.01 * unit() } else { 0.002 * (unit() - 0.5) });
            }
        }
    }
    m.validate().expect("the fixture is valid");
    m
}

/// JSON mutants beyond bytes: each number of the text replaced by values a reader must
/// refuse or hold in range (past f32, past 32 bits, zero, negative, subnormal).
fn json_number_mutants(text: &str) -> Vec<Vec<u8>> {
    const VALUES: [&str; 8] = ["1e300", "-1e39", "1e-300", "4294967296", "4294967299", "0", "-1", "1e30"];
    let bytes = text.as_bytes();
    let mut numbers = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() || (bytes[i] == b'-' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let start = i;
            i += 1;
            while i < bytes.len() && (bytes[i].is_ascii_digit() || b".eE+-".contains(&bytes[i])) {
                i += 1;
            }
            numbers.push(start..i);
        } else {
            i += 1;
        }
    }
    let mut out = Vec::new();
    for range in numbers {
        for v in VALUES {
            let mut m = text[..range.start].to_string();
            m.push_str(v);
            m.push_str(&text[range.end..]);
            out.push(m.into_bytes());
        }
    }
    out
}

/// Runs `fuzz` under [`BUDGET`], then checks that none of its allocations was larger.
fn within_budget(what: &str, fuzz: impl FnOnce()) {
    kit::budget::set(BUDGET);
    ALLOC.reset();
    fuzz();
    let largest = ALLOC.largest() as u64;
    println!("fuzz {what}: largest allocation {largest} bytes");
    assert!(largest <= BUDGET, "{what}: one allocation of {largest} bytes, above the {BUDGET}-byte budget");
}

#[test]
fn model_readers_survive_mutation() {
    within_budget("model readers", || {
        for p in [2, 4] {
            let m = model(p, 3);
            let text = m.to_json().unwrap();
            let mut cases = kit::fuzz::mutants(text.as_bytes(), 96, 300, 0, 11 + p as u64);
            cases.extend(json_number_mutants(&text));
            let tally = kit::fuzz::run_file_reader("m.json", &cases, Model::load);
            assert!(tally.accepted > 0 && tally.refused > 0, "{tally:?}");

            let mut bin = Vec::new();
            m.write_binary(&mut bin).unwrap();
            let cases = kit::fuzz::mutants(&bin, 48, 400, 1024, 21 + p as u64);
            let tally = kit::fuzz::run_file_reader("m.smoe", &cases, |path: &Path| {
                let loaded = Model::load(path)?;
                // What a reader accepts, the writers write back.
                let again = tempfile::NamedTempFile::with_suffix(".smoe").unwrap();
                loaded.save(again.path())?;
                Ok::<_, smoe::model::ModelError>(loaded)
            });
            assert!(tally.accepted > 0 && tally.refused > 0, "{tally:?}");
        }
    });
}

/// `bytes` with its last four bytes set to the CRC-32 of the rest, as a `.smc` file ends.
fn with_crc(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.len() >= 8 {
        let n = bytes.len() - 4;
        let crc = crc32fast::hash(&bytes[..n]);
        bytes[n..].copy_from_slice(&crc.to_le_bytes());
    }
    bytes
}

#[test]
fn smc_reader_survives_mutation() {
    within_budget(".smc reader", || {
        for p in [2, 4] {
            let m = model(p, 12);
            let smc = smoe::codec::encode_model(&m, &smoe::codec::Steps::scaled(0.5)).unwrap();
            let read = |path: &Path| {
                let loaded = Model::load(path)?;
                // What the reader accepts, the writers write back.
                let again = tempfile::NamedTempFile::with_suffix(".smc").unwrap();
                loaded.save(again.path())?;
                Ok::<_, smoe::model::ModelError>(loaded)
            };
            let cases = kit::fuzz::mutants(&smc, 48, 300, 512, 51 + p as u64);
            let tally = kit::fuzz::run_file_reader("m.smc", &cases, read);
            assert!(tally.accepted > 0 && tally.refused > 0, "{tally:?}");
            let fixed: Vec<Vec<u8>> = cases.into_iter().map(with_crc).collect();
            let tally = kit::fuzz::run_file_reader("m.smc", &fixed, read);
            assert!(tally.accepted > 0 && tally.refused > 0, "{tally:?}");
            // The most kernels a header may declare, with a payload of nothing: refused by the
            // budget before anything is allocated.
            let mut big = smc.clone();
            big[6 + 2 * p..10 + 2 * p].copy_from_slice(&(1u32 << 24).to_le_bytes());
            let (_dir, path) = kit::testing::temp_path("big.smc");
            std::fs::write(&path, with_crc(big)).unwrap();
            let e = Model::load(&path).unwrap_err().to_string();
            assert!(e.contains("budget") || e.contains("memory"), "{e}");
        }
    });
}

#[test]
fn fit_input_loader_survives_mutation() {
    within_budget("fit inputs", || {
        let dir = tempfile::tempdir().unwrap();
        let npy = dir.path().join("lf.npy");
        let values: Vec<f32> = (0..2 * 2 * 3 * 4 * 3).map(|i| (i % 7) as f32 / 7.0).collect();
        kit::npy::write_f32(&npy, &[2, 2, 3, 4, 3], &values).unwrap();
        let bytes = std::fs::read(&npy).unwrap();
        let cases = kit::fuzz::mutants(&bytes, 128, 400, 0, 31);
        let tally = kit::fuzz::run_file_reader("lf.npy", &cases, Grid::load);
        assert!(tally.accepted > 0 && tally.refused > 0, "{tally:?}");

        let png = dir.path().join("a.png");
        let rgb: Vec<u8> = (0..7 * 5 * 3).map(|i| (i * 13 % 256) as u8).collect();
        kit::image::save_rgb8(&png, 7, 5, &rgb).unwrap();
        let bytes = std::fs::read(&png).unwrap();
        let cases = kit::fuzz::mutants(&bytes, 40, 300, 0, 41);
        kit::fuzz::run_file_reader("a.png", &cases, Grid::load);
    });
}
