//! The CPU merge of encoded RGBA8 spans as a rank of a two-rank direct-send makes it (the
//! compositing library's blend mode): each rank's 4K image split in halves,
//! the received half checked, the two halves composited. Synthetic premultiplied frames:
//! runs (about half the pixels active, a quarter overlapping) and full frames (every pixel).
//! Prints one JSON line per case with times in ms over `repeat` (default 7) runs, each as
//! [least wall, median wall, mean CPU of all threads].
//!
//!   cargo run --release -p tessera-composite --example merge_timing [-- WxH [repeat]]

use std::time::Instant;

use composite::ap::Encoded;
use composite::cpu::blend::composite;
use composite::cpu::encode::encode_parallel;
use composite::frame::Frame;
use composite::spans::split;
use composite::types::Op;

/// CPU time of every thread of this process so far, in ns (the machine may be shared: wall
/// time counts others' work too).
fn cpu_ns() -> u64 {
    let tasks = std::fs::read_dir("/proc/self/task").unwrap();
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// `f`'s result, its wall time and the CPU time of all threads, in ms.
fn ms<T>(f: impl FnOnce() -> T) -> (T, [f64; 2]) {
    let (t, c) = (Instant::now(), cpu_ns());
    let v = f();
    (v, [t.elapsed().as_secs_f64() * 1e3, (cpu_ns() - c) as f64 / 1e6])
}

/// The least and the median wall time, and the mean CPU time (the CPU clock may tick in
/// milliseconds, and idle worker threads spin a little): on a shared machine the least wall
/// time is the one least disturbed.
fn summary(v: &[[f64; 2]]) -> [f64; 3] {
    let mut wall: Vec<f64> = v.iter().map(|t| t[0]).collect();
    wall.sort_by(f64::total_cmp);
    let cpu = v.iter().map(|t| t[1]).sum::<f64>() / v.len() as f64;
    [wall[0], wall[wall.len() / 2], cpu].map(|t| (t * 100.0).round() / 100.0)
}

/// A `w x h` frame of premultiplied colour: alternating inactive and active runs of 1 to
/// 400 pixels (about half the pixels active), or every pixel active (`full`).
fn frame(w: u32, h: u32, seed: u64, full: bool) -> Frame {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    let mut f = Frame::empty(w, h);
    let (mut i, mut on) = (0usize, false);
    while i < f.pixels() {
        let len = (1 + next() % 400) as usize;
        for p in i..(i + len).min(f.pixels()) {
            if on || full {
                let [r, g, b, a] = next().to_le_bytes();
                let m = |x: u8| ((x as u32 * a as u32 + 127) / 255) as u8;
                f.color[p] = u32::from_le_bytes([m(r), m(g), m(b), a]);
                f.depth[p] = (next() % 1000) as f32 / 1001.0;
            }
        }
        (i, on) = (i + len, !on);
    }
    f
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (w, h) = args
        .first()
        .and_then(|s| s.split_once('x'))
        .map(|(w, h)| (w.parse().unwrap(), h.parse().unwrap()))
        .unwrap_or((3840u32, 2160u32));
    let repeat: usize = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(7);
    for case in ["runs", "full"] {
        let frames: Vec<Frame> = (0..2).map(|seed| frame(w, h, seed, case == "full")).collect();
        let encoded: Vec<Encoded> = frames.iter().map(encode_parallel).collect();
        let n = frames[0].pixels();
        let (mut split_ms, mut check_ms, mut merge_ms) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..repeat {
            // Rank 0 keeps the first half and receives rank 1's first half.
            let (halves, t) = ms(|| encoded.iter().map(|e| split(e, &[n / 2])).collect::<Vec<_>>());
            split_ms.push(t.map(|t| t / 2.0));
            let theirs = halves[1][0].clone();
            let (theirs, t) = ms(|| Encoded::checked(theirs.pixels, theirs.words).unwrap());
            check_ms.push(t);
            let (_, t) = ms(|| composite(&[&halves[0][0], &theirs], Op::Over).unwrap());
            merge_ms.push(t);
        }
        println!(
            "{{\"case\":\"{case}\",\"width\":{w},\"height\":{h},\"threads\":{},\"split_ms\":{:?},\"check_ms\":{:?},\"merge_ms\":{:?}}}",
            rayon::current_num_threads(),
            summary(&split_ms),
            summary(&check_ms),
            summary(&merge_ms)
        );
    }
}
