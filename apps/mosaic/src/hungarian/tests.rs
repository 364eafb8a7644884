use engine::testing;
use indicatif::ProgressBar;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::cpu::hungarian as cpu;
use crate::gpu::hungarian::GpuHungarian;

/// An n x n matrix of whole numbers below `levels`, seeded.
fn whole(n: usize, levels: u32, seed: u64) -> DistanceMatrix {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    DistanceMatrix::new(n, n, (0..n * n).map(|_| rng.gen_range(0..levels) as f64).collect()).unwrap()
}

/// The matrices the solvers are checked on: floor(u n) (one level a column, as `mosaic
/// bench --costs`), few levels (many ties), a single level, and awkward sizes.
fn cases() -> Vec<(String, DistanceMatrix)> {
    let mut cases = Vec::new();
    for (k, &n) in [1usize, 2, 7, 37, 100, 130, 257].iter().enumerate() {
        cases.push((format!("floor(u n) {n}"), whole(n, n as u32, 11 + k as u64)));
        cases.push((format!("4 levels {n}"), whole(n, 4, 31 + k as u64)));
    }
    cases.push(("2 levels 61".into(), whole(61, 2, 5)));
    cases.push(("constant 33".into(), DistanceMatrix::new(33, 33, vec![7.0; 33 * 33]).unwrap()));
    cases
}

fn optimum(d: &DistanceMatrix) -> f64 {
    d.cost(&exact::solve(d, &ProgressBar::hidden()))
}

#[test]
fn integer_costs_are_taken_from_square_matrices_of_few_whole_levels_only() {
    assert!(integer_costs(&whole(20, 80, 1)).is_some());
    assert!(integer_costs(&whole(20, 400, 1)).is_none(), "more than 4 n levels");
    let rectangular = DistanceMatrix::new(2, 3, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
    assert!(integer_costs(&rectangular).is_none());
    let fraction = DistanceMatrix::new(2, 2, vec![0.0, 1.5, 2.0, 3.0]).unwrap();
    assert!(integer_costs(&fraction).is_none());
    assert_eq!(
        integer_costs(&whole(3, 9, 2)).unwrap(),
        whole(3, 9, 2).data.iter().map(|&x| x as i32).collect::<Vec<_>>()
    );
}

#[test]
fn the_twin_reaches_a_certified_optimum() {
    for (name, d) in cases() {
        let costs = integer_costs(&d).unwrap();
        let state = cpu::solve(&costs, d.rows);
        let solution = certify(&d, &state, 0.0).unwrap();
        assert!(!solution.fallback, "{name}: the certificate failed");
        assert_eq!(solution.cost, optimum(&d), "{name}");
        assert!(solution.gap.abs() <= 1e-9 * solution.cost.max(1.0), "{name}: gap {}", solution.gap);
    }
}

#[test]
fn the_gpu_start_equals_the_twin() {
    let ctx = testing::context();
    for (n, levels, seed) in [(1, 3, 1), (37, 37, 2), (130, 11, 3), (333, 333, 4)] {
        let d = whole(n, levels, seed);
        let costs = integer_costs(&d).unwrap_or_else(|| d.data.iter().map(|&x| x as i32).collect());
        let (u, v, zeros) = GpuHungarian::new(ctx, n).unwrap().start(&costs).unwrap();
        let want_u = row_minima(&costs, n);
        let want_v = column_minima(&costs, n, &want_u);
        assert_eq!(u, want_u, "n = {n}: row reductions");
        assert_eq!(v, want_v, "n = {n}: column reductions");
        assert_eq!(zeros, super::zeros(&costs, n, &want_u, &want_v), "n = {n}: zero list");
    }
    testing::assert_no_validation_messages();
}

#[test]
fn the_gpu_reaches_the_twins_cost_with_a_certificate() {
    let ctx = testing::context();
    for (name, d) in cases() {
        let costs = integer_costs(&d).unwrap();
        let state = GpuHungarian::new(ctx, d.rows).unwrap().solve(&costs).unwrap();
        let state = match state {
            Ok(state) => state,
            // A single level makes every entry a zero: more than the list holds.
            Err(crate::gpu::hungarian::Fault::Zeros) if d.rows * 64 < d.rows * d.rows => continue,
            Err(fault) => panic!("{name}: {fault:?}"),
        };
        let solution = certify(&d, &state, 0.0).unwrap();
        assert!(!solution.fallback, "{name}: the certificate failed");
        let twin = cpu::solve(&costs, d.rows);
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
    let costs = integer_costs(&d).unwrap();
    let state = GpuHungarian::new(ctx, 100).unwrap().solve(&costs).unwrap();
    assert_eq!(state.err(), Some(crate::gpu::hungarian::Fault::Zeros));
    let solution = crate::solve::exact_on_gpu(ctx, &d, &ProgressBar::hidden()).unwrap();
    assert_eq!(solution.cost, 300.0);
    let d = whole(64, 64, 9);
    let solution = crate::solve::exact_on_gpu(ctx, &d, &ProgressBar::hidden()).unwrap();
    assert_eq!(solution.cost, optimum(&d));
    assert!(!solution.fallback);
    testing::assert_no_validation_messages();
}
