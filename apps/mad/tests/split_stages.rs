//! `--split-stages`: one pair's detection stage on one context and its appearance stage on
//! another, or its bands shared among several (contexts on the test device stand in for
//! GPUs), gives the single-context scores and maps, on random pairs at odd sizes.

mod common;

use common::rel;
use engine::{Context, DeviceSelector};
use kit::rng::Rng;
use mad::gpu::{score_split, GpuMad};
use mad::synth::{scene, to_u8};
use mad::GrayImage;

const BOUND: f64 = 1e-6;

/// An 8-bit reference (a random scene, or white noise) and a copy with uniform noise of up
/// to `amplitude` levels.
fn random_pair(width: usize, height: usize, amplitude: f64, seed: u64, white: bool) -> (GrayImage, GrayImage) {
    let mut rng = Rng::new(seed);
    let r: Vec<u8> = if white {
        (0..width * height).map(|_| (rng.uniform() * 256.0).min(255.0) as u8).collect()
    } else {
        to_u8(&scene(width, height, rng.next_u64()))
    };
    let noisy = |v: u8, u: f64| (v as f64 + amplitude * (2.0 * u - 1.0)).round().clamp(0.0, 255.0) as u8;
    let d: Vec<u8> = r.iter().map(|&v| noisy(v, rng.uniform())).collect();
    (GrayImage::from_u8(width, height, &r), GrayImage::from_u8(width, height, &d))
}

/// `n` more contexts on the test device.
fn contexts(n: usize) -> Vec<GpuMad> {
    let selector = DeviceSelector::from_env().unwrap();
    (0..n).map(|_| GpuMad::new(&Context::open(&selector).unwrap()).unwrap()).collect()
}

#[test]
fn split_over_two_contexts_equals_one_context() {
    split_equals_one_context(2);
}

#[test]
fn bands_split_over_three_contexts_equal_one_context() {
    split_equals_one_context(3);
}

fn split_equals_one_context(devices: usize) {
    let one = GpuMad::new(engine::testing::context()).unwrap();
    let gpus = contexts(devices);
    let gpus: Vec<&GpuMad> = gpus.iter().collect();
    // White noise masks the distortion entirely (detection and MAD 0): the split agrees there too.
    let cases = [(61, 45, 20.0, false), (97, 131, 6.0, false), (45, 61, 60.0, true)];
    for (i, (w, h, amplitude, white)) in cases.into_iter().enumerate() {
        let (r, d) = random_pair(w, h, amplitude, 7 + i as u64, white);
        // With maps on the first pair only: each stage reads back its own map.
        let maps = i == 0;
        let (want, want_maps) = one.score(&r, &d, maps).unwrap();
        let (got, got_maps, times) = score_split(&gpus, &r, &d, maps).unwrap();
        for (name, g, s) in [
            ("mad", got.mad, want.mad),
            ("detection", got.detection, want.detection),
            ("appearance", got.appearance, want.appearance),
            ("alpha", got.alpha, want.alpha),
        ] {
            assert!(rel(g, s) <= BOUND, "{w}x{h} {name}: split {g} single {s}");
        }
        assert!(white || want.mad > 0.0, "{w}x{h}: a distorted scene scores above 0: {want:?}");
        assert!(want.appearance > 0.0, "{w}x{h}: {want:?}");
        assert_eq!(got_maps.is_some(), maps);
        if let (Some(g), Some(s)) = (got_maps, want_maps) {
            assert_eq!(g.detection, s.detection);
            for (name, g, s) in [("appearance", &g.appearance, &s.appearance), ("combined", &g.combined, &s.combined)] {
                let worst = g.iter().zip(s).map(|(&a, &b)| rel(a as f64, b as f64)).fold(0.0, f64::max);
                assert!(worst <= BOUND, "{w}x{h} {name} map: {worst}");
            }
        }
        // Each device's time comes back where the device has timestamps.
        assert_eq!(times.detection_ms.is_some(), times.appearance_ms.is_some());
        assert!(times.detection_ms.is_none_or(|t| t > 0.0) && times.appearance_ms.is_none_or(|t| t > 0.0), "{times:?}");
        let per_device = if devices > 2 && times.appearance_ms.is_some() { devices - 1 } else { 0 };
        assert_eq!(times.appearance_device_ms.len(), per_device, "{times:?}");
    }
    engine::testing::assert_no_validation_messages();
}

#[test]
fn a_split_pair_of_unequal_sizes_is_refused() {
    let gpu = GpuMad::new(engine::testing::context()).unwrap();
    let (r, _) = random_pair(61, 45, 5.0, 1, true);
    let (_, d) = random_pair(45, 61, 5.0, 2, true);
    assert!(matches!(score_split(&[&gpu, &gpu], &r, &d, false), Err(mad::MadError::SizeMismatch { .. })));
    assert!(matches!(score_split(&[&gpu], &r, &r, false), Err(mad::MadError::SplitDevices(1))));
}
