use engine::testing;
use indicatif::ProgressBar;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::cpu::hungarian as cpu;
use crate::exact;
use crate::gpu::hungarian::GpuHungarian;

/// An m x n matrix of whole numbers below `levels`, seeded.
fn whole_mn(m: usize, n: usize, levels: u32, seed: u64) -> DistanceMatrix {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    DistanceMatrix::new(m, n, (0..m * n).map(|_| rng.gen_range(0..levels) as f64).collect()).unwrap()
}

fn whole(n: usize, levels: u32, seed: u64) -> DistanceMatrix {
    whole_mn(n, n, levels, seed)
}

/// The matrices the solvers are checked on: floor(u n) (one level a column, as `mosaic
/// bench --costs`), few levels (many ties), a single level, square and wide, at awkward
/// sizes.
fn cases() -> Vec<(String, DistanceMatrix)> {
    let mut cases = Vec::new();
    for (k, &n) in [1usize, 2, 7, 37, 100, 130, 257].iter().enumerate() {
        cases.push((format!("floor(u n) {n}"), whole(n, n as u32, 11 + k as u64)));
        cases.push((format!("4 levels {n}"), whole(n, 4, 31 + k as u64)));
    }
    for (k, &(m, n)) in [(1usize, 5usize), (3, 4), (29, 77), (100, 403), (250, 251)].iter().enumerate() {
        cases.push((format!("floor(u n) {m}x{n}"), whole_mn(m, n, n as u32, 51 + k as u64)));
        cases.push((format!("3 levels {m}x{n}"), whole_mn(m, n, 3, 71 + k as u64)));
    }
    cases.push(("2 levels 61".into(), whole(61, 2, 5)));
    cases.push(("constant 33".into(), DistanceMatrix::new(33, 33, vec![7.0; 33 * 33]).unwrap()));
    cases
}

fn optimum(d: &DistanceMatrix) -> f64 {
    d.cost(&exact::solve(d, &ProgressBar::hidden()))
}

#[test]
fn the_gpu_solve_takes_matrices_of_few_whole_levels_only() {
    let ctx = testing::context();
    let takes = |d: &DistanceMatrix| {
        crate::gpu::hungarian::solve(ctx, d, largest_level(d.rows, d.cols)).unwrap().map(|s| s.cost)
    };
    let d = whole(20, 2560, 1);
    assert_eq!(takes(&d), Some(optimum(&d)), "square: 128 n levels");
    assert_eq!(takes(&whole(20, 20000, 1)), None, "square: more than 128 n levels");
    let d = whole_mn(5, 30, 120, 1);
    assert_eq!(takes(&d), Some(optimum(&d)), "wide: 4 n levels");
    assert_eq!(takes(&whole_mn(5, 30, 400, 1)), None, "wide: more than 4 n levels");
    let tall = DistanceMatrix::new(3, 2, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
    assert_eq!(takes(&tall), None, "more rows than columns");
    // A fraction in a row the first look skips: found by the upload's check of every entry.
    let mut data = whole(130, 130, 3).data;
    data[129 * 130 + 7] = 2.5;
    assert_eq!(takes(&DistanceMatrix::new(130, 130, data).unwrap()), None, "a fraction");
    let d = whole(3, 9, 2);
    assert_eq!(costs(&d), d.data.iter().map(|&x| x as i32).collect::<Vec<_>>());
    testing::assert_no_validation_messages();
}

#[test]
fn the_twin_reaches_a_certified_optimum() {
    for (name, d) in cases() {
        let costs = costs(&d);
        let state = cpu::solve(&costs, d.rows, d.cols);
        let solution = certify(&d, &state, 0.0, 0.0).unwrap();
        assert!(!solution.fallback, "{name}: the certificate failed");
        assert_eq!(solution.cost, optimum(&d), "{name}");
        assert!(solution.gap.abs() <= 1e-9 * solution.cost.max(1.0), "{name}: gap {}", solution.gap);
    }
}

#[test]
fn the_gpu_start_equals_the_twin() {
    let ctx = testing::context();
    // 2100 x 2100 is uploaded in two chunks.
    let shapes = [
        (1, 1, 3, 1),
        (37, 37, 37, 2),
        (130, 130, 11, 3),
        (333, 333, 333, 4),
        (45, 301, 301, 5),
        (2100, 2100, 2100, 6),
    ];
    for (m, n, levels, seed) in shapes {
        let d = whole_mn(m, n, levels, seed);
        let costs = costs(&d);
        let solver = GpuHungarian::new(ctx, m, n).unwrap();
        assert!(solver.upload_matrix(&d, f64::MAX).unwrap());
        let (u, v, zeros) = solver.start().unwrap();
        let (want_u, want_v) = reductions(&costs, m, n);
        assert_eq!(u, want_u, "{m}x{n}: row reductions");
        assert_eq!(v, want_v, "{m}x{n}: column reductions");
        assert_eq!(zeros, super::zeros(&costs, n, &want_u, &want_v), "{m}x{n}: zero list");
    }
    testing::assert_no_validation_messages();
}

#[test]
fn the_gpu_reaches_the_twins_cost_with_a_certificate() {
    let ctx = testing::context();
    for (name, d) in cases() {
        let costs = costs(&d);
        let state = GpuHungarian::new(ctx, d.rows, d.cols).unwrap().solve(&costs).unwrap();
        let state = match state {
            Ok(state) => state,
            // A single level makes every entry a zero: more than the list holds.
            Err(crate::gpu::hungarian::Fault::Zeros) if d.rows * 64 < d.rows * d.cols => continue,
            Err(fault) => panic!("{name}: {fault:?}"),
        };
        let solution = certify(&d, &state, 0.0, 0.0).unwrap();
        assert!(!solution.fallback, "{name}: the certificate failed");
        let twin = cpu::solve(&costs, d.rows, d.cols);
        assert_eq!(solution.cost, d.cost(&twin.col4row.iter().map(|&j| j as usize).collect::<Vec<_>>()), "{name}");
    }
    testing::assert_no_validation_messages();
}

#[test]
fn exact_on_the_gpu_falls_back_to_the_auction_when_the_zero_list_overflows() {
    let ctx = testing::context();
    // Every entry of a constant matrix is a zero after the reductions: 100 x 100 of them
    // exceed the list's 64 a row.
    let d = DistanceMatrix::new(100, 100, vec![3.0; 100 * 100]).unwrap();
    let costs = costs(&d);
    let state = GpuHungarian::new(ctx, 100, 100).unwrap().solve(&costs).unwrap();
    assert_eq!(state.err(), Some(crate::gpu::hungarian::Fault::Zeros));
    let solution = crate::solve::exact_on_gpu(ctx, &d, &ProgressBar::hidden()).unwrap();
    assert_eq!(solution.cost, 300.0);
    let d = whole(64, 64, 9);
    let solution = crate::solve::exact_on_gpu(ctx, &d, &ProgressBar::hidden()).unwrap();
    assert_eq!(solution.cost, optimum(&d));
    assert!(!solution.fallback);
    testing::assert_no_validation_messages();
}

/// Where a tick's GPU time goes, and the replayed solve's wall time, on floor(u n) matrices
/// (run on a GPU: `--ignored`): the replay's recording, the start and each run of the
/// replay, against each kernel's GPU time over 300 ticks in one command buffer.
#[test]
#[ignore]
fn tick_profile() {
    let ctx = testing::context();
    for n in [4096, 10000] {
        let d = crate::costs::matrix(crate::costs::Kind::Integer, n, n, (n * 31 + n) as u64).unwrap();
        let solver = GpuHungarian::new(ctx, n, n).unwrap();
        for _ in 0..2 {
            assert!(solver.upload_matrix(&d, f64::MAX).unwrap());
            let mut last = std::time::Instant::now();
            let mut steps: Vec<(String, f64)> = Vec::new();
            let state = solver
                .run_observed(|name| {
                    steps.push((name.to_string(), last.elapsed().as_secs_f64() * 1e3));
                    last = std::time::Instant::now();
                })
                .unwrap()
                .unwrap();
            let runs: Vec<f64> = steps.iter().filter(|s| s.0 == "run").map(|s| s.1).collect();
            let fixed: Vec<String> =
                steps.iter().filter(|s| s.0 != "run").map(|s| format!("{} {:.2} ms", s.0, s.1)).collect();
            eprintln!(
                "n {n}: {}; {} runs, {:.1} ms in all: {}; {} passes, {} dual updates",
                fixed.join(", "),
                runs.len(),
                runs.iter().sum::<f64>(),
                runs.iter().map(|ms| format!("{ms:.2}")).collect::<Vec<_>>().join(" "),
                state.passes,
                state.dual_updates
            );
        }
        assert!(solver.upload_matrix(&d, f64::MAX).unwrap());
        for pass in solver.profile(300).unwrap() {
            eprintln!("n {n}: {} {:.3} ms over 300 ticks", pass.name, pass.ms);
        }
    }
}
