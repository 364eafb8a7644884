//! The tiled path against the whole-image path. A tile whose window holds the periodic
//! image a whole number of times sees exactly the whole image's spectrum, so with such
//! windows the tiles reproduce the whole-image scores and maps to rounding: this checks the
//! wrapping, the filters' positions, the blocks' indexing and the pooling at odd and even
//! sizes. How much halo real tiles need is a property of the filters, measured separately
//! (the module's documentation). The budget decides between the paths.

use mad::grid::Grid;
use mad::synth::{distort, scene, Distortion};
use mad::tiled::{plan_cpu, score_cpu, Plan};

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
    kit::budget::set(2 << 30);
    // 8000x8000: 7.7 GB over the whole image; tiles fit in 2 GiB.
    assert!(!mad::cpu::whole_fits(8000, 8000));
    mad::cpu::check_budget(8000, 8000).unwrap();
    let plan = plan_cpu(8000, 8000, false).unwrap();
    let window = (plan.window.0 * plan.window.1) as u64;
    assert!(16 * 8000 * 8000 + 120 * window <= 2 << 30, "{plan:?}");
    assert!(plan.tiles().len() > 1 && plan.tiles().len() < 100, "{} tiles", plan.tiles().len());
    // Whole where it fits.
    assert!(mad::cpu::whole_fits(1000, 1000));
    // A budget too small for even one tile beside the pair is refused with the reason.
    kit::budget::set(64 << 20);
    let err = mad::cpu::check_budget(8000, 8000).unwrap_err().to_string();
    assert!(err.contains("in tiles"), "{err}");
}
