//! The tiled path against the whole-image path. A tile whose window holds the periodic
//! image a whole number of times sees exactly the whole image's spectrum, so with such
//! windows the tiles reproduce the whole-image scores and maps to rounding: this checks the
//! wrapping, the filters' positions, the blocks' indexing and the pooling at odd and even
//! sizes. How much halo real tiles need is a property of the filters, measured separately
//! (the module's documentation). The budget decides between the paths.

use mad::cpu::tiled::{plan_cpu, score_cpu};
use mad::grid::Grid;
use mad::synth::{distort, scene, Distortion};
use mad::tiled::Plan;

/// The memory budget is the process's: tests that set it take turns.
static BUDGET: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-300)
}

/// A plan whose windows are `window` pixels, its cells' first pixel at `halo`.
fn exact_plan(width: usize, height: usize, tile: (usize, usize), halo: usize, window: (usize, usize)) -> Plan {
    let plan = Plan::with_halos(width, height, tile, halo, halo);
    Plan { window, detection_window: window, ..plan }
}

fn check(width: usize, height: usize, plan: &Plan, seed: u64) {
    let r = scene(width, height, seed);
    for kind in [Distortion::Noise(8.0)] {
        let d = distort(&r, kind, seed);
        let (whole, whole_maps) = mad::cpu::score_whole(&r, &d).unwrap();
        let (tiled, maps) = score_cpu(&r, &d, plan, true).unwrap();
        assert!(plan.tiles().len() > 4, "{} tiles", plan.tiles().len());
        for (name, a, b) in [
            ("mad", tiled.mad, whole.mad),
            ("detection", tiled.detection, whole.detection),
            ("appearance", tiled.appearance, whole.appearance),
        ] {
            assert!(rel(a, b) < 1e-9, "{width}x{height} {kind:?} {name}: tiled {a} whole {b}");
        }
        let maps = maps.unwrap();
        let g = Grid::new(width, height);
        for (name, a, b) in [
            ("detection", &maps.detection, &whole_maps.detection),
            ("appearance", &maps.appearance, &whole_maps.appearance),
            ("combined", &maps.combined, &whole_maps.combined),
        ] {
            for y in 0..height {
                for x in 0..width {
                    let (a, b) = (a[y * width + x], b[y * width + x]);
                    assert!((a - b).abs() <= 1e-5 * b.abs().max(1e-3), "{name} map at ({x}, {y}): {a} vs {b}");
                }
            }
        }
        assert_eq!((maps.width, maps.height), (g.width, g.height));
    }
}

#[test]
fn tiles_reproduce_the_whole_image_at_even_sizes() {
    // 120 = 4*9 + 12 + 2*36 and 96 = 4*3 + 12 + 2*36: each window is the image itself.
    check(120, 96, &exact_plan(120, 96, (9, 3), 36, (120, 96)), 3);
    let (r, d) = (scene(120, 96, 4), distort(&scene(120, 96, 4), Distortion::Blur(1.5), 4));
    let plan = exact_plan(120, 96, (9, 3), 36, (120, 96));
    assert!(rel(score_cpu(&r, &d, &plan, false).unwrap().0.mad, mad::cpu::score_whole(&r, &d).unwrap().0.mad) < 1e-9);
}

#[test]
fn tiles_reproduce_the_whole_image_at_odd_sizes() {
    // 202 = 4*5 + 12 + 2*85: each window holds the 101-pixel image twice per side.
    check(101, 101, &exact_plan(101, 101, (5, 5), 85, (202, 202)), 7);
}

#[test]
fn the_budget_picks_tiles_where_the_whole_image_does_not_fit() {
    let _turn = BUDGET.lock().unwrap_or_else(|e| e.into_inner());
    kit::budget::set(2 << 30);
    // 8000x8000: 7.7 GB over the whole image; tiles fit in 2 GiB.
    assert!(!mad::cpu::whole_fits(8000, 8000));
    mad::cpu::check_budget(8000, 8000).unwrap();
    let plan = plan_cpu(8000, 8000, false).unwrap();
    let window = (plan.window.0 * plan.window.1) as u64;
    assert!(16 * 8000 * 8000 + (120 + 128) * window <= 2 << 30, "{plan:?}");
    assert!(plan.tiles().len() > 1 && plan.tiles().len() < 100, "{} tiles", plan.tiles().len());
    // Whole where it fits.
    assert!(mad::cpu::whole_fits(1000, 1000));
    // A budget too small for even one tile beside the pair is refused with the reason.
    kit::budget::set(64 << 20);
    let err = mad::cpu::check_budget(8000, 8000).unwrap_err().to_string();
    assert!(err.contains("in tiles"), "{err}");
}

/// A GPU plan ([`Plan::fits_gpu`]) whose one window is `window` pixels, its cells' first
/// pixel at `halo` (a multiple of 4).
fn exact_gpu_plan(width: usize, height: usize, tile: (usize, usize), halo: usize, window: (usize, usize)) -> Plan {
    let plan = exact_plan(width, height, tile, halo, window);
    assert!(plan.fits_gpu(), "{plan:?}");
    plan
}

/// GPU tiles against the CPU's tiles of the same plan and the GPU's whole image: with
/// windows holding the image a whole number of times, all three agree to f32 rounding.
fn check_gpu(width: usize, height: usize, plan: &Plan, seed: u64) {
    let gpu = mad::gpu::GpuMad::new(engine::testing::context()).unwrap();
    let _turn = BUDGET.lock().unwrap_or_else(|e| e.into_inner());
    let r = scene(width, height, seed);
    let d = distort(&r, Distortion::Noise(8.0), seed);
    let (whole, _) = gpu.score(&r, &d, false).unwrap();
    let (tiled, maps) = gpu.score_tiled(&r, &d, plan, true).unwrap();
    let (cpu, cpu_maps) = score_cpu(&r, &d, plan, true).unwrap();
    for (name, a, b, c) in [
        ("mad", tiled.mad, whole.mad, cpu.mad),
        ("detection", tiled.detection, whole.detection, cpu.detection),
        ("appearance", tiled.appearance, whole.appearance, cpu.appearance),
    ] {
        assert!(rel(a, c) < 1e-5, "{width}x{height} {name}: GPU tiled {a} CPU tiled {c}");
        assert!(rel(a, b) < 1e-5, "{width}x{height} {name}: GPU tiled {a} GPU whole {b}");
    }
    let (maps, cpu_maps) = (maps.unwrap(), cpu_maps.unwrap());
    for (name, a, b) in
        [("detection", &maps.detection, &cpu_maps.detection), ("appearance", &maps.appearance, &cpu_maps.appearance)]
    {
        let top = b.iter().fold(0f32, |m, v| m.max(v.abs()));
        let worst = a.iter().zip(b.iter()).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(worst <= 1e-4 * top, "{name} map: {worst} of {top}");
    }
    engine::testing::assert_no_validation_messages();
}

#[test]
fn gpu_tiles_reproduce_the_whole_image_at_even_sizes() {
    check_gpu(120, 96, &exact_gpu_plan(120, 96, (9, 3), 36, (120, 96)), 3);
}

#[test]
fn gpu_tiles_reproduce_the_whole_image_at_odd_sizes() {
    // 202 >= 4*5 + 12 + 2*84 and 225 >= 4*11 + 12 + 2*84: two and three periods of 101 and 75.
    check_gpu(101, 75, &exact_gpu_plan(101, 75, (5, 11), 84, (202, 225)), 7);
}

#[test]
fn a_small_budget_makes_the_gpu_score_in_tiles() {
    let mut gpu = mad::gpu::GpuMad::new(engine::testing::context()).unwrap();
    gpu.set_tile_halo(16);
    let _turn = BUDGET.lock().unwrap_or_else(|e| e.into_inner());
    let (w, h) = (301, 157);
    let r = scene(w, h, 5);
    let d = distort(&r, Distortion::Blur(1.5), 5);
    kit::budget::set(1 << 40);
    assert_eq!(gpu.plan(w as u64, h as u64, false).unwrap(), None, "whole where it fits");
    let (whole, _) = gpu.score(&r, &d, false).unwrap();
    // Room for the pair and windows of 128x128, not for the whole image's slot.
    kit::budget::set(16 * (w * h) as u64 + 128 * 128 * 200);
    let plan = gpu.plan(w as u64, h as u64, false).unwrap().expect("tiles under a small budget");
    assert!(plan.fits_gpu() && plan.tiles().len() > 4, "{plan:?}");
    let (tiled, _) = gpu.score(&r, &d, false).unwrap();
    let (cpu, _) = score_cpu(&r, &d, &plan, false).unwrap();
    kit::budget::set(1 << 40);
    assert!(rel(tiled.mad, cpu.mad) < 1e-5, "GPU tiled {tiled:?} CPU tiled {cpu:?}");
    // A 16-pixel halo is far too little for the appearance stage's long bands: only close.
    assert!(rel(tiled.mad, whole.mad) < 0.1, "tiled {tiled:?} whole {whole:?}");
    engine::testing::assert_no_validation_messages();
}

/// A pair whose spectra would not bind in one piece (over the device's storage-buffer
/// range: lavapipe's 128 MiB holds about 2900x2900) is planned in tiles whose buffers do,
/// however large the budget, instead of failing in the FFT's setup.
#[test]
fn a_pair_over_the_binding_range_is_planned_in_tiles() {
    let gpu = mad::gpu::GpuMad::new(engine::testing::context()).unwrap();
    let range = engine::testing::context().info().max_storage_buffer_range;
    let _turn = BUDGET.lock().unwrap_or_else(|e| e.into_inner());
    kit::budget::set(1 << 40);
    // The side whose pair's two complex spectra (16 bytes a pixel) just pass the range.
    let side = ((range / 16) as f64).sqrt() as u64 + 1;
    let plan = gpu.plan(side, side, false).unwrap().expect("tiles where the whole pair cannot bind");
    let window = (plan.window.0 * plan.window.1) as u64;
    // The four ramped lines of a window are the largest binding of a tile.
    assert!(plan.fits_gpu() && 32 * window <= range, "{plan:?} against a range of {range}");
    assert_eq!(gpu.plan(512, 512, false).unwrap(), None, "a small pair stays whole");
}

/// Tiles that really split the image (16 windows of 270x270 over a 512x480 pair) against the
/// whole image. The CSF is even about the spectrum's edge and the detection score converges;
/// the finest log-Gabor bands' seams at the spectrum's edge come from whole lines
/// (`mad::seams`); the longest band (wavelength 243) needs more halo than a 512x480 pair
/// allows. Measured here (halo 64): appearance 4.0e-4 relative, MAD 2.2e-4, detection 4e-5
/// (before the seams: 1.5e-3 and 7.6e-4).
#[test]
fn tiles_smaller_than_the_image_agree_within_the_stated_bound() {
    let (w, h) = (512, 480);
    let r = scene(w, h, 100);
    let d = distort(&r, Distortion::Jpeg(30), 0);
    let (whole, _) = mad::cpu::score_whole(&r, &d).unwrap();
    let plan = Plan::with_halos(w, h, (32, 32), 64, mad::tiled::DETECTION_HALO);
    assert!(plan.window.0 < w && plan.window.1 < h && plan.tiles().len() == 16, "{plan:?}");
    let (tiled, _) = score_cpu(&r, &d, &plan, false).unwrap();
    for (name, a, b, bound) in [
        ("detection", tiled.detection, whole.detection, 1e-4),
        ("appearance", tiled.appearance, whole.appearance, 1e-3),
        ("mad", tiled.mad, whole.mad, 5e-4),
    ] {
        assert!(rel(a, b) < bound, "{name}: tiled {a} whole {b}, {:.1e} relative", rel(a, b));
    }
}
