//! Mutation tests of the `.lfc` and `.lfd` readers (and what `info` and `decode` do with an
//! accepted file): valid tiny files are truncated, bit-flipped and have header words set to
//! edge values, with and without their hashes fixed up (so the checks behind the hash are
//! reached), the `.lfc` section table is mutated with its hash fixed, and a section's
//! payload is mutated and re-wrapped in a valid zstd frame (table entry and hash fixed; a
//! range-coded section's own mutations are in `bitstream`'s tests). Every
//! case must end in `Ok` or a typed error, never a panic, never an allocation above
//! `BOUND`, and every accepted `.lfc` must decode to finite samples in [0, 1]. The `.npy`
//! light-field reader (read in bands of rows) is mutated the same way.

use std::path::Path;

use kit::fuzz::{mutants, run_file_reader, CountingAllocator};
use lightfield::bitstream::{Compressed, Header, HEADER_LEN};
use lightfield::bytes::fnv1a64;
use lightfield::codec::{decode_lightfield, encode_lightfield, CodecPath};
use lightfield::codes::Params;
use lightfield::dictionary::Ensemble;
use lightfield::lightfield::LightField;
use lightfield::patch::PatchShape;
use lightfield::sections::{compress, Streams, ENTRY_LEN};

#[global_allocator]
static ALLOC: CountingAllocator = CountingAllocator::new();

/// The memory budget the readers run under, and the largest single allocation allowed
/// (the budget plus room for the test harness).
const BUDGET: u64 = 32 << 20;
const BOUND: usize = 64 << 20;

/// A tiny encoded light field: 2 x 2 views of 6 x 5 pixels, 3x3x2x1 patches, K = 2.
/// Returns the ensemble, the file, and its section's payload as zstd would hold it.
fn tiny() -> (Ensemble, Vec<u8>, Vec<u8>) {
    let lf = lightfield::synth::generate((2, 2), (6, 5), 3);
    let ens = Ensemble::random(PatchShape { my: 3, mx: 3, mu: 2, mv: 1 }, 2, 5);
    let (c, _) = encode_lightfield(&lf, &ens, Params { sparsity: 30, epsilon: 0.02 }, CodecPath::Cpu).unwrap();
    let mut streams = Streams::default();
    streams.push(&c.codes, 0..c.codes.len());
    (ens, c.to_bytes().unwrap(), streams.concat())
}

/// What `info` and `decode --backend cpu` do with a file.
fn read_lfc(path: &Path) -> lightfield::Result<()> {
    let bytes = kit::input::read_bounded(path, kit::budget::get())?;
    Header::parse(&bytes)?;
    let c = Compressed::read(path)?;
    let (lf, _) = decode_lightfield(&c, CodecPath::Cpu)?;
    assert!(lf.data.iter().all(|x| (0.0..=1.0).contains(x)), "an accepted file decoded outside [0, 1]");
    Ok(())
}

/// Rewrites the `.lfc` header hash.
fn rehash_lfc(mut m: Vec<u8>) -> Vec<u8> {
    if m.len() >= HEADER_LEN {
        let sum = fnv1a64(&m[..HEADER_LEN - 8]);
        m[HEADER_LEN - 8..HEADER_LEN].copy_from_slice(&sum.to_le_bytes());
    }
    m
}

/// Rewrites the `.lfd` trailing hash.
fn rehash_lfd(mut m: Vec<u8>) -> Vec<u8> {
    if m.len() >= 16 {
        let n = m.len() - 8;
        let sum = fnv1a64(&m[..n]);
        m[n..].copy_from_slice(&sum.to_le_bytes());
    }
    m
}

/// Bytes of the tiny file's table (two entries: the ensemble, one section) and its hash.
const TABLE_LEN: usize = 2 * ENTRY_LEN;

/// Rewrites the `.lfc` section-table hash.
fn rehash_table(mut m: Vec<u8>) -> Vec<u8> {
    if m.len() >= HEADER_LEN + TABLE_LEN + 8 {
        let sum = fnv1a64(&m[HEADER_LEN..HEADER_LEN + TABLE_LEN]);
        m[HEADER_LEN + TABLE_LEN..HEADER_LEN + TABLE_LEN + 8].copy_from_slice(&sum.to_le_bytes());
    }
    m
}

/// The section's frame of `lfc` replaced by `payload` compressed into a new, valid frame
/// (its table entry and the table hash fixed).
fn rewrap(lfc: &[u8], payload: &[u8]) -> Vec<u8> {
    let header = Header::parse(lfc).unwrap();
    let frame = compress(payload, header.entries[1].coefficients).unwrap();
    let mut out = lfc[..header.starts[1]].to_vec();
    let at = HEADER_LEN + ENTRY_LEN;
    let e = frame.entry;
    for (i, w) in [e.coefficients, e.payload_len, e.frame_len, e.checksum].iter().enumerate() {
        out[at + 8 * i..at + 8 * i + 8].copy_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(&frame.bytes);
    rehash_table(out)
}

#[test]
fn lfc_and_lfd_readers_survive_mutation() {
    kit::budget::set(BUDGET);
    ALLOC.set_limit(BOUND);
    ALLOC.reset();
    let (ens, lfc, payload) = tiny();
    assert_eq!(Header::parse(&lfc).unwrap().sections(), 1);

    let raw = mutants(&lfc, HEADER_LEN + 16, 200, 2048, 11);
    let t = run_file_reader("raw.lfc", &raw, read_lfc);
    assert!(t.refused > 0);
    let header: Vec<Vec<u8>> = mutants(&lfc, HEADER_LEN, 0, 0, 12).into_iter().map(rehash_lfc).collect();
    let t = run_file_reader("header.lfc", &header, read_lfc);
    assert!(t.refused > 0 && t.accepted > 0, "{t:?}");
    let table: Vec<Vec<u8>> = mutants(&lfc[..HEADER_LEN + TABLE_LEN], HEADER_LEN + TABLE_LEN, 0, 0, 16)
        .into_iter()
        .map(|m| rehash_table([&m[..], &lfc[HEADER_LEN + TABLE_LEN..]].concat()))
        .collect();
    let t = run_file_reader("table.lfc", &table, read_lfc);
    assert!(t.refused > 0, "{t:?}");
    let body: Vec<Vec<u8>> = mutants(&payload, 136, 300, 0, 13).iter().map(|m| rewrap(&lfc, m)).collect();
    let t = run_file_reader("payload.lfc", &body, read_lfc);
    assert!(t.refused > 0 && t.accepted > 0, "{t:?}");

    let lfd = ens.to_lfd_bytes().unwrap();
    let raw = mutants(&lfd, 64, 200, 2048, 14);
    run_file_reader("raw.lfd", &raw, Ensemble::read);
    let fixed: Vec<Vec<u8>> = mutants(&lfd, 64, 200, 0, 15).into_iter().map(rehash_lfd).collect();
    let t = run_file_reader("rehashed.lfd", &fixed, Ensemble::read);
    assert!(t.refused > 0 && t.accepted > 0, "{t:?}");

    let largest = ALLOC.largest();
    println!("largest single allocation: {largest} bytes (bound {BOUND}, budget {BUDGET})");
    assert!(largest <= BOUND);
}

#[test]
fn the_banded_npy_reader_survives_mutation() {
    kit::budget::set(BUDGET);
    ALLOC.set_limit(BOUND);
    ALLOC.reset();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("valid.npy");
    lightfield::synth::generate((2, 3), (7, 5), 4).write_npy(&path).unwrap();
    let valid = std::fs::read(&path).unwrap();
    let read = |p: &Path| -> lightfield::Result<()> {
        let lf = LightField::read_npy(p)?;
        assert!(lf.data.iter().all(|x| (0.0..=1.0).contains(x)), "an accepted .npy read outside [0, 1]");
        Ok(())
    };
    // The header (magic, length, dict) is the first 128 bytes of this small file.
    let t = run_file_reader("lightfield.npy", &mutants(&valid, 128, 300, 0, 17), read);
    assert!(t.refused > 0 && t.accepted > 0, "{t:?}");
    let largest = ALLOC.largest();
    println!("largest single allocation: {largest} bytes (bound {BOUND}, budget {BUDGET})");
    assert!(largest <= BOUND);
}
