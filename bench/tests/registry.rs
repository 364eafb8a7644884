//! Every registered kernel, of the engine and of all five apps, sweeps two points at tiny
//! sizes on the test device (lavapipe here) with its default parameters, and each point
//! passes its check against the CPU reference and reports a time, a floor and (where the
//! kernel names its shader) an occupancy.

use std::time::{Duration, Instant};

use tessera_bench::measure::{point, Device};
use tessera_bench::registry::{self, Config, Reps};

#[test]
fn every_registered_kernel_sweeps_two_points_and_passes_its_check() {
    let ctx = engine::testing::context().clone();
    let mut device = Device::new(ctx).unwrap();
    let reps = Reps { repeats: 2, warm_up: Duration::ZERO };
    let apps: std::collections::BTreeSet<&str> =
        registry::ALL.iter().map(|e| e.name.split('.').next().unwrap()).collect();
    assert_eq!(apps.into_iter().collect::<Vec<_>>(), ["composite", "engine", "lightfield", "mad", "mosaic", "smoe"]);
    for entry in &registry::ALL {
        let start = Instant::now();
        let config = Config(entry.kernel.params().iter().map(|p| (p.key, p.default)).collect());
        for size in entry.kernel.sizes().tiny {
            let p = point(&mut device, entry, &config, size, reps)
                .unwrap_or_else(|e| panic!("{} {} at {size}: {e}", entry.name, config.label()));
            assert!(p.check_passed, "{} at {size}: error {} over {}", entry.name, p.max_error, p.tolerance);
            assert!(p.median_ms > 0.0 && p.floor_ms > 0.0, "{p:?}");
            assert_eq!(p.shape.is_some(), entry.kernel.has_shader(), "{}", entry.name);
            if entry.kernel.has_shader() {
                assert!(p.occupancy.is_some_and(|o| o > 0.0 && o <= 1.0), "{}: {}", entry.name, p.limited_by);
            }
        }
        println!("{}: two points in {:?}", entry.name, start.elapsed());
    }
    engine::testing::assert_no_validation_messages();
}
