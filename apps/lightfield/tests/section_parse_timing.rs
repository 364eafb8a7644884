//! A measurement, not a check (ignored): the wall time of parsing every section of `.lfc`
//! files (decompression or range decoding, every value checked), as the decoders do before
//! the synthesis. `LFC_TIMING_FILES=a.lfc:b.lfc cargo test --workspace --test
//! section_parse_timing -- --ignored --nocapture` prints, per file, its version, the sections
//! range coded, and the least of ten parses.

use std::time::Instant;

use lightfield::bitstream::{Compressed, Header};
use lightfield::sections::RANGED_MAGIC;

#[test]
#[ignore]
fn parse_time_of_the_named_files() {
    let Ok(files) = std::env::var("LFC_TIMING_FILES") else { return };
    for path in files.split(':') {
        let bytes = std::fs::read(path).unwrap();
        let header = Header::parse(&bytes).unwrap();
        let ranged =
            (0..header.sections()).filter(|&s| header.section_frame(&bytes, s).1.starts_with(RANGED_MAGIC)).count();
        let best = (0..10)
            .map(|_| {
                let t = Instant::now();
                let c = Compressed::from_bytes(&bytes).unwrap();
                std::hint::black_box(c);
                t.elapsed().as_secs_f64() * 1e3
            })
            .fold(f64::INFINITY, f64::min);
        println!(
            "{path}: version {}, {} bytes, {} coefficients, {ranged} of {} sections range coded, parse {best:.1} ms",
            header.version,
            bytes.len(),
            header.coefficients,
            header.sections()
        );
    }
}
