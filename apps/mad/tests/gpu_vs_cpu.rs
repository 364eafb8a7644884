//! The GPU path against the f64 CPU reference: every score within 0.1% (the acceptance
//! bound), on synthetic scenes at awkward sizes under each kind of distortion, scored as one
//! batch (several chunks, two in flight) and pair by pair with maps.

mod common;

use common::rel;
use mad::gpu::GpuMad;
use mad::synth::{distort, scene, Distortion};
use mad::GrayImage;

const BOUND: f64 = 1e-3;

fn pairs() -> Vec<(usize, GrayImage, GrayImage)> {
    let mut out = Vec::new();
    for (w, h, seed) in [(97, 61, 1), (64, 64, 2)] {
        let r = scene(w, h, seed);
        for d in [Distortion::Noise(8.0), Distortion::Blur(1.5), Distortion::Contrast(0.6), Distortion::Jpeg(20)] {
            out.push((out.len(), r.clone(), distort(&r, d, seed)));
        }
    }
    out
}

#[test]
fn batch_scores_match_the_cpu_reference() {
    let ctx = engine::testing::context();
    let gpu = GpuMad::new(ctx).unwrap();
    let input = pairs();
    let mut got = Vec::new();
    gpu.score_stream(input.clone(), Some(3), false, |s| got.push((s.tag, s.scores))).unwrap();
    assert_eq!(got.len(), input.len());
    for ((tag, g), (i, r, d)) in got.iter().zip(&input) {
        assert_eq!(tag, i, "results come back in input order");
        let (c, _) = mad::cpu::score(r, d).unwrap();
        for (name, a, b) in
            [("mad", g.mad, c.mad), ("detection", g.detection, c.detection), ("appearance", g.appearance, c.appearance)]
        {
            assert!(rel(a, b) < BOUND, "pair {i} ({}x{}) {name}: gpu {a} cpu {b}", r.width, r.height);
        }
    }
    engine::testing::assert_no_validation_messages();
}

#[test]
fn maps_match_the_cpu_reference() {
    let ctx = engine::testing::context();
    let gpu = GpuMad::new(ctx).unwrap();
    let r = scene(53, 40, 9);
    let d = distort(&r, Distortion::Noise(12.0), 3);
    let (g, maps) = gpu.score(&r, &d, true).unwrap();
    let (c, cmaps) = mad::cpu::score(&r, &d).unwrap();
    assert!(rel(g.mad, c.mad) < BOUND, "gpu {} cpu {}", g.mad, c.mad);
    let maps = maps.unwrap();
    for (name, a, b) in
        [("detection", &maps.detection, &cmaps.detection), ("appearance", &maps.appearance, &cmaps.appearance)]
    {
        let scale = b.iter().fold(0.0f32, |m, v| m.max(v.abs())) as f64;
        let want: Vec<f64> = b.iter().map(|&v| v as f64).collect();
        let err = engine::testing::max_rel_error(a, &want, scale * 1e-2);
        assert!(err < 1e-2, "{name} map: max relative error {err}");
    }
    engine::testing::assert_no_validation_messages();
}

#[test]
fn random_pixels_at_an_awkward_size_match_the_cpu_reference() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let (w, h) = (71, 43);
    let r: Vec<u8> = (0..w * h).map(|_| rng.gen_range(1..=255)).collect();
    let d: Vec<u8> = r.iter().map(|&v| (v as i32 + rng.gen_range(-30..=30)).clamp(1, 255) as u8).collect();
    let (r, d) = (GrayImage::from_u8(w, h, &r), GrayImage::from_u8(w, h, &d));
    let gpu = GpuMad::new(engine::testing::context()).unwrap();
    let (g, maps) = gpu.score(&r, &d, true).unwrap();
    let (c, cmaps) = mad::cpu::score(&r, &d).unwrap();
    for (name, a, b) in
        [("mad", g.mad, c.mad), ("detection", g.detection, c.detection), ("appearance", g.appearance, c.appearance)]
    {
        assert!(rel(a, b) < BOUND, "{name}: gpu {a} cpu {b}");
    }
    let maps = maps.unwrap();
    let want: Vec<f64> = cmaps.appearance.iter().map(|&v| v as f64).collect();
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(engine::testing::max_rel_error(&maps.appearance, &want, scale * 1e-2) < 1e-2);
    engine::testing::assert_no_validation_messages();
}
