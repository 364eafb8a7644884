//! Scores measured with the authors' original release (MAD_index.m from MaxiaoyuHehe/FRIQA,
//! ical_std.c and ical_stat.c from hanwei0912/SmoothAdversarialExamples at 7db8784, compiled
//! with `mkoctfile --mex`) under GNU Octave 7.3.0 with the image package, run outside this
//! repository. Two edits were needed to run it there: the three comparisons of
//! `Ci_ref`/`Ci_dst` in `hi_index` wrapped in `real()` (MATLAB compares complex numbers by
//! their real parts, Octave by magnitude), and `mxDestroyArray(TMP)` removed from
//! `ical_std.c` (it is handed a `double*` and crashes Octave; removing it only leaks).
//!
//! The inputs are the deterministic scenes and distortions of `mad::synth` (written as 8-bit
//! PNGs and read back by Octave's `imread`), an RGB pair assembled from them (Octave's
//! `rgb2gray` path), and a formula image with a flat gradient beside a black-and-white
//! checkerboard (dark regions under the luminance threshold, zero small-window deviation).
//!
//! Acceptance is 1% for both backends. The f64 CPU reference agreed with Octave to about
//! 1e-12 on every case, so it is held to 1e-6 here; the f32 GPU path to 1%.

mod common;

use common::rel;
use mad::gpu::GpuMad;
use mad::synth::{distort, scene, to_u8, Distortion};
use mad::GrayImage;

/// (width, height, scene seed, distortion, MAD, d_detect, d_appear) from Octave.
const SYNTH_CASES: [(usize, usize, u64, Distortion, f64, f64, f64); 14] = [
    (97, 61, 2, Distortion::Blur(1.0), 43.3316364021, 3984.99116277, 1.59114931874),
    (97, 61, 2, Distortion::Blur(3.0), 106.481888777, 37454.1956026, 4.32014334402),
    (97, 61, 2, Distortion::Contrast(0.4), 62.9074113409, 177654.813464, 1.80783424896),
    (97, 61, 2, Distortion::Contrast(0.7), 38.5690628566, 30420.2057882, 0.910932851656),
    (97, 61, 2, Distortion::Jpeg(10), 66.8425928054, 9478.89017493, 2.62782488113),
    (97, 61, 2, Distortion::Jpeg(50), 17.7967129533, 225.77041237, 1.20342110379),
    (97, 61, 2, Distortion::Noise(20.0), 89.9120295411, 84846.3003944, 3.0997397956),
    (97, 61, 2, Distortion::Noise(5.0), 23.9864077336, 739.086292847, 1.06251332073),
    (96, 96, 1, Distortion::Jpeg(10), 72.2117887489, 7700.86892417, 3.14658919514),
    (96, 96, 1, Distortion::Blur(1.0), 41.6656424807, 3418.787457, 1.55887406467),
    (200, 136, 4, Distortion::Noise(5.0), 28.8249883987, 739.151597462, 1.50896785416),
    (200, 136, 4, Distortion::Contrast(0.7), 40.0136467737, 49172.676075, 0.937610913147),
    (256, 256, 3, Distortion::Jpeg(50), 12.2565905613, 78.4115010865, 1.28269514603),
    (256, 256, 3, Distortion::Blur(3.0), 64.3673036765, 13072.9258084, 2.30589507243),
];
/// Octave's (MAD, d_detect, d_appear).
type Expected = (f64, f64, f64);

/// The seed `distort` was given for every synthetic case.
const DISTORT_SEED: u64 = 7;
/// The RGB pair (channels from the 97x61 set, see `rgb_pair`).
const RGB_CASE: Expected = (21.3915253505, 726.405247527, 0.861206306366);
/// The formula pair (see `formula_pair`).
const FORMULA_CASE: Expected = (22.7612037559, 11489.9610107, 0.431575957016);

fn check(label: &str, got: &mad::Scores, want: Expected, bound: f64) {
    for (name, a, b) in
        [("mad", got.mad, want.0), ("detection", got.detection, want.1), ("appearance", got.appearance, want.2)]
    {
        assert!(rel(a, b) < bound, "{label} {name}: got {a}, Octave {b} (bound {bound})");
    }
}

fn synth_pair(w: usize, h: usize, seed: u64, d: Distortion) -> (GrayImage, GrayImage) {
    let r = scene(w, h, seed);
    let x = distort(&r, d, DISTORT_SEED);
    (r, x)
}

/// Reference channels: the 97x61 scene, its blur1 and contrast0.7 versions; distorted
/// channels: its noise5, jpeg50 and blur3 versions. Written as an RGB PNG and read back.
fn rgb_pair(dir: &std::path::Path) -> (GrayImage, GrayImage) {
    let r = scene(97, 61, 2);
    let channel = |d: Distortion| to_u8(&distort(&r, d, DISTORT_SEED));
    let interleave = |c: [Vec<u8>; 3]| (0..97 * 61).flat_map(|i| [c[0][i], c[1][i], c[2][i]]).collect::<Vec<u8>>();
    let reference = interleave([to_u8(&r), channel(Distortion::Blur(1.0)), channel(Distortion::Contrast(0.7))]);
    let distorted =
        interleave([channel(Distortion::Noise(5.0)), channel(Distortion::Jpeg(50)), channel(Distortion::Blur(3.0))]);
    let (rp, dp) = (dir.join("rgb_ref.png"), dir.join("rgb_dst.png"));
    kit::image::save_rgb8(&rp, 97, 61, &reference).unwrap();
    kit::image::save_rgb8(&dp, 97, 61, &distorted).unwrap();
    mad::input::load_pair(&rp, &dp, |_, _| Ok(())).unwrap()
}

/// 75x50: a vertical gradient 70 + y left of x = 30, a 6-pixel black/white checkerboard
/// right of it; the distorted image adds 4 * ((7x + 13y) mod 11 - 5), clamped.
fn formula_pair() -> (GrayImage, GrayImage) {
    let (w, h) = (75usize, 50usize);
    let reference: Vec<u8> = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            if x < 30 {
                70 + y as u8
            } else if (x / 6 + y / 6) % 2 == 0 {
                255
            } else {
                0
            }
        })
        .collect();
    let distorted: Vec<u8> = reference
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let (x, y) = ((i % w) as i32, (i / w) as i32);
            (v as i32 + 4 * ((7 * x + 13 * y) % 11 - 5)).clamp(0, 255) as u8
        })
        .collect();
    (GrayImage::from_u8(w, h, &reference), GrayImage::from_u8(w, h, &distorted))
}

#[test]
fn cpu_reference_matches_the_original_release() {
    for &(w, h, seed, d, m, det, app) in &SYNTH_CASES {
        let (r, x) = synth_pair(w, h, seed, d);
        let (s, _) = mad::cpu::score(&r, &x).unwrap();
        check(&format!("{w}x{h} {}", d.label()), &s, (m, det, app), 1e-6);
    }
    let dir = tempfile::tempdir().unwrap();
    let (r, x) = rgb_pair(dir.path());
    check("rgb", &mad::cpu::score(&r, &x).unwrap().0, RGB_CASE, 1e-6);
    let (r, x) = formula_pair();
    check("formula", &mad::cpu::score(&r, &x).unwrap().0, FORMULA_CASE, 1e-6);
}

#[test]
fn gpu_matches_the_original_release_within_one_percent() {
    let gpu = GpuMad::new(engine::testing::context()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut pairs: Vec<(String, Expected, GrayImage, GrayImage)> = SYNTH_CASES
        .iter()
        .filter(|c| c.0 < 200)
        .map(|&(w, h, seed, d, m, det, app)| {
            let (r, x) = synth_pair(w, h, seed, d);
            (format!("{w}x{h} {}", d.label()), (m, det, app), r, x)
        })
        .collect();
    let (r, x) = rgb_pair(dir.path());
    pairs.push(("rgb".into(), RGB_CASE, r, x));
    let (r, x) = formula_pair();
    pairs.push(("formula".into(), FORMULA_CASE, r, x));
    let mut n = 0;
    gpu.score_stream(pairs.iter().map(|(l, want, r, x)| ((l, *want), r, x)), None, false, |s| {
        check(s.tag.0, &s.scores, s.tag.1, 1e-2);
        n += 1;
    })
    .unwrap();
    assert_eq!(n, pairs.len());
    engine::testing::assert_no_validation_messages();
}
