//! GPU FFT against the f64 CPU reference on random complex images.
//!
//! Error norm, per image: `max_k |gpu[k] - ref[k]| / max_k |ref[k]|` (complex moduli), i.e.
//! the largest deviation relative to the largest magnitude of the reference spectrum. Round
//! trips (GPU forward then GPU inverse) use the same norm against the input.

use rand::{Rng, SeedableRng};

use super::*;
use crate::error::EngineError;
use crate::testing;

const BOUND: f64 = 1e-5;

fn random_images(len: usize, seed: u64) -> Vec<[f32; 2]> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..len).map(|_| [rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0)]).collect()
}

/// Largest per-image error of `got` against `want` in the norm above.
fn max_image_error(got: &[[f32; 2]], want: &[Complex64], image: usize) -> f64 {
    assert_eq!(got.len(), want.len());
    got.chunks(image)
        .zip(want.chunks(image))
        .map(|(g, w)| {
            let scale = w.iter().map(|v| v.norm()).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
            let err =
                g.iter().zip(w).map(|(g, w)| (Complex64::new(g[0] as f64, g[1] as f64) - w).norm()).fold(0.0, f64::max);
            err / scale
        })
        .fold(0.0, f64::max)
}

/// Forward against the CPU reference and the round trip, both within [`BOUND`].
fn check_plan(plan: &Fft2d, seed: u64) {
    let (width, height, batch) = (plan.width(), plan.height(), plan.batch());
    let input = random_images(width * height * batch, seed);
    let mut want: Vec<Complex64> = input.iter().map(|v| Complex64::new(v[0] as f64, v[1] as f64)).collect();
    fft2d_cpu(&mut want, width, height, Direction::Forward).unwrap();

    let spectrum = plan.forward(&input).unwrap();
    let err = max_image_error(&spectrum, &want, width * height);
    assert!(err < BOUND, "{width}x{height} x{batch}: forward error {err:e}");

    let back = plan.inverse(&spectrum).unwrap();
    let original: Vec<Complex64> = input.iter().map(|v| Complex64::new(v[0] as f64, v[1] as f64)).collect();
    let err = max_image_error(&back, &original, width * height);
    assert!(err < BOUND, "{width}x{height} x{batch}: round-trip error {err:e}");
}

/// [`check_plan`] on the plan of each `(width, height, batch)` of `shapes` (seeds counting
/// from `first_seed`), once `expect` has checked the plan's kernels; then no validation
/// messages.
fn check_shapes(shapes: &[(usize, usize, usize)], first_seed: u64, expect: impl Fn(&Fft2d)) {
    for (i, &(w, h, b)) in shapes.iter().enumerate() {
        let plan = Fft2d::new(testing::context(), w, h, b).unwrap();
        expect(&plan);
        check_plan(&plan, first_seed + i as u64);
    }
    testing::assert_no_validation_messages();
}

#[test]
fn power_of_two_sizes_match_rustfft() {
    check_shapes(
        &[(1, 1, 1), (2, 2, 1), (8, 8, 1), (64, 32, 3), (4, 16, 2), (512, 512, 1), (4096, 2, 1), (2, 4096, 1)],
        0,
        |_| {},
    );
}

#[test]
fn bluestein_sizes_match_rustfft() {
    // (21, 151): columns on a 512-point FFT, whose exchange splits real and imaginary parts
    // where 16 columns of complex values overflow shared memory (lavapipe's 32 KiB, NVIDIA's
    // 48 KiB), with a last workgroup only partly filled.
    check_shapes(
        &[(31, 17, 3), (1001, 7, 1), (333, 517, 1), (7, 1, 2), (1, 11, 1), (2047, 2, 1), (21, 151, 1)],
        100,
        |plan| {
            let (w, h) = (plan.width(), plan.height());
            assert!(!plan.kernels().contains(&"fft_mixed"), "{w}x{h}: {:?}", plan.kernels());
        },
    );
}

/// Lengths `2^a 3^b 5^c` on the mixed-radix kernel (rows and columns, ragged last
/// workgroups, one pass per axis), beside power-of-two and Bluestein axes. The bound is
/// [`BOUND`] as for the others: f32 rounding grows with log2 of the size (~1e-7 x 21 at
/// 1920x1080), far under it.
#[test]
fn mixed_radix_sizes_match_rustfft() {
    let shapes = [
        (1920, 1080, 1),
        (7, 5, 2),
        (45, 81, 1),
        (1000, 3, 1),
        (97, 60, 1),
        (360, 270, 1),
        (768, 6, 1),
        (3, 1, 2),
        (1, 10, 3),
        (12, 2, 1),
        (2, 125, 2),
    ];
    check_shapes(&shapes, 500, |plan| {
        let (w, h) = (plan.width(), plan.height());
        let mixed = plan.kernels().iter().filter(|&&k| k == "fft_mixed").count();
        let want = [w, h].iter().filter(|&&n| mixed::radices(n).is_some()).count();
        assert_eq!(mixed, want, "{w}x{h}: {:?}", plan.kernels());
        assert!(plan.passes() <= 2, "{w}x{h}: {} passes", plan.passes());
    });
}

#[test]
fn the_error_check_can_fail() {
    // A transform that is off by one value must be caught by the norm above.
    let ctx = testing::context();
    let plan = Fft2d::new(ctx, 8, 4, 1).unwrap();
    let input = random_images(32, 9);
    let mut want: Vec<Complex64> = input.iter().map(|v| Complex64::new(v[0] as f64, v[1] as f64)).collect();
    fft2d_cpu(&mut want, 8, 4, Direction::Forward).unwrap();
    let mut got = plan.forward(&input).unwrap();
    got[5][1] += 1e-3 * want.iter().map(|v| v.norm()).fold(0.0, f64::max) as f32;
    assert!(max_image_error(&got, &want, 32) > BOUND);
}

#[test]
fn bad_shapes_are_errors() {
    let ctx = testing::context();
    assert!(matches!(Fft2d::new(ctx, 0, 4, 1), Err(EngineError::InvalidInput(_))));
    // One more 4096 x 4096 image of complex f32 (128 MiB each) than the device can bind.
    let images = (ctx.info().max_storage_buffer_range >> 27) as usize + 1;
    assert!(matches!(Fft2d::new(ctx, 1 << 12, 1 << 12, images), Err(EngineError::BindingRange { .. })));
    let plan = Fft2d::new(ctx, 4, 4, 2).unwrap();
    let short = ctx.upload(&[[0.0f32; 2]; 16], "short").unwrap();
    let mut rec = ctx.recorder().unwrap();
    assert!(matches!(plan.record(&mut rec, &short, Direction::Forward), Err(EngineError::InvalidInput(_))));
}

/// Image-sized transforms, too slow for lavapipe in CI; run with `cargo test -- --ignored`
/// (on a GPU: `TESSERA_DEVICE=0`).
#[test]
#[ignore]
fn image_sizes_match_rustfft() {
    let shapes = [
        (1920, 1080, 1),
        (4096, 4096, 1),
        (512, 512, 8),
        (2048, 1536, 2),
        (2560, 1440, 1),
        (16384, 64, 1),
        (50, 16383, 1),
    ];
    check_shapes(&shapes, 200, |_| {});
}

/// The four-step path for lines longer than a workgroup holds, reached at small sizes by
/// lowering the in-workgroup limit; one real long size as well.
#[test]
fn four_step_sizes_match_rustfft() {
    let ctx = testing::context();
    for (i, (w, h, b, limit)) in [
        (64, 32, 2, 16),
        (256, 8, 1, 64),
        (31, 17, 3, 16),
        (333, 100, 1, 64),
        (5, 1024, 1, 32),
        (8192, 2, 1, usize::MAX),
    ]
    .into_iter()
    .enumerate()
    {
        let plan = Fft2d::with_direct_limit(ctx, w, h, b, limit).unwrap();
        assert!(plan.passes() > 2, "{w}x{h}: the four-step path was not taken");
        check_plan(&plan, 300 + i as u64);
    }
    testing::assert_no_validation_messages();
}

/// Two transforms recorded back to back with one four-step plan (sharing its scratch) on
/// different buffers, with no barrier from the caller. Lavapipe runs dispatches in order, so
/// this checks the results of scratch reuse, not the barrier that guards it on a GPU.
#[test]
fn back_to_back_records_with_one_four_step_plan() {
    let ctx = testing::context();
    let (w, h) = (96, 40);
    let plan = Fft2d::with_direct_limit(ctx, w, h, 1, 32).unwrap();
    let inputs = [random_images(w * h, 400), random_images(w * h, 401)];
    let buffers: Vec<_> = inputs.iter().map(|v| ctx.upload(v, "test input").unwrap()).collect();
    let mut rec = ctx.recorder().unwrap();
    for b in &buffers {
        plan.record(&mut rec, b, Direction::Forward).unwrap();
    }
    rec.submit().unwrap().wait().unwrap();
    for (input, buffer) in inputs.iter().zip(&buffers) {
        let mut want: Vec<Complex64> = input.iter().map(|v| Complex64::new(v[0] as f64, v[1] as f64)).collect();
        fft2d_cpu(&mut want, w, h, Direction::Forward).unwrap();
        let err = max_image_error(&ctx.download(buffer).unwrap(), &want, w * h);
        assert!(err < BOUND, "error {err:e}");
    }
    testing::assert_no_validation_messages();
}

#[test]
fn every_kernel_shape_matches_rustfft() {
    let ctx = testing::context();
    let d = FftConfig::default();
    let configs = FFT_VALUES
        .iter()
        .map(|&values| FftConfig { values, ..d })
        .chain(FFT_COLUMNS.iter().map(|&columns| FftConfig { columns, ..d }))
        .chain(FFT_ROW_INVOCATIONS.iter().map(|&row_invocations| FftConfig { row_invocations, ..d }));
    for (i, config) in configs.enumerate() {
        // Short rows (many per workgroup), columns that fill a group and a ragged last one,
        // a Bluestein size, and mixed-radix sizes (rows and columns).
        for (w, h, b) in [(16, 64, 2), (64, 40, 1), (26, 8, 1), (60, 45, 2), (16, 100, 1)] {
            check_plan(&Fft2d::with_config(ctx, w, h, b, config).unwrap(), 40 + i as u64);
        }
    }
    assert!(Fft2d::with_config(ctx, 8, 8, 1, FftConfig { values: 16, ..d }).is_err());
    testing::assert_no_validation_messages();
}
