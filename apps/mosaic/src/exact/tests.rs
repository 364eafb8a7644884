use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::matrix::DistanceMatrix;

/// Optimum by enumerating every map of patches to tiles that uses no tile more than
/// `repeat` times (independent of the solver and of its slots).
fn brute_force(d: &DistanceMatrix, repeat: usize) -> f64 {
    fn go(d: &DistanceMatrix, repeat: usize, i: usize, uses: &mut Vec<usize>, acc: f64, best: &mut f64) {
        if i == d.rows {
            *best = best.min(acc);
            return;
        }
        for j in 0..d.cols {
            if uses[j] < repeat {
                uses[j] += 1;
                go(d, repeat, i + 1, uses, acc + d.at(i, j), best);
                uses[j] -= 1;
            }
        }
    }
    let mut best = f64::INFINITY;
    go(d, repeat, 0, &mut vec![0; d.cols], 0.0, &mut best);
    best
}

/// Entries k / 2 for k below `levels`: few levels make many ties.
fn random(m: usize, n: usize, levels: u32, rng: &mut ChaCha8Rng) -> DistanceMatrix {
    DistanceMatrix::new(m, n, (0..m * n).map(|_| rng.gen_range(0..levels) as f64 * 0.5).collect()).unwrap()
}

/// A shape m x n with m <= n: square a third of the time.
fn shape(rng: &mut ChaCha8Rng, most: usize) -> (usize, usize) {
    let m = rng.gen_range(1..=most);
    (m, if rng.gen_bool(0.34) { m } else { rng.gen_range(m..=most + 2) })
}

/// A repeat up to `most_repeat` and a matrix of `tiles` columns with at most 6 rows that
/// the repeat can cover, with few levels half the time.
fn with_repeats(
    rng: &mut ChaCha8Rng,
    most_repeat: usize,
    tiles: std::ops::RangeInclusive<usize>,
) -> (usize, DistanceMatrix) {
    let repeat = rng.gen_range(1..=most_repeat);
    let n = rng.gen_range(tiles);
    let m = rng.gen_range(1..=(n * repeat).min(6));
    let levels = if rng.gen() { 3 } else { 1000 };
    (repeat, random(m, n, levels, rng))
}

/// Every way the solver runs: with and without the initialisation, lazy, dense, adaptive
/// and lazy for the first `switch` searches then dense.
fn plans(switch: usize) -> Vec<Plan> {
    let mut plans = Vec::new();
    for initialise in [false, true] {
        let plan = Plan { initialise, first_list: lazy::FIRST_LIST, dense_after: usize::MAX, adaptive: false };
        plans.push(plan);
        plans.push(Plan { dense_after: 0, ..plan });
        plans.push(Plan { adaptive: true, ..plan });
        plans.push(Plan { dense_after: switch, first_list: 2, ..plan });
    }
    plans
}

/// Solves `d` by `plan`, checks the uses and the certificate, and returns the cost.
fn solved(d: &DistanceMatrix, repeat: usize, plan: Plan) -> f64 {
    let s = solve_with(d, repeat, plan, &ProgressBar::hidden());
    d.check_uses(&s.assignment, repeat).unwrap();
    let cost = d.cost(&s.assignment);
    let gap = s.certify(d, 1e-9 * d.mean().max(1.0)).unwrap_or_else(|e| panic!("{}x{} {plan:?}: {e}", d.rows, d.cols));
    assert!(gap.abs() <= 1e-9 * cost.max(1.0), "{}x{} x{repeat} {plan:?}: duality gap {gap}", d.rows, d.cols);
    cost
}

/// Asserts that `got`, a cost found on `d`, is the optimum `want` (within rounding); `what`
/// names the case after the matrix's shape.
fn assert_optimum(d: &DistanceMatrix, got: f64, want: f64, what: std::fmt::Arguments<'_>) {
    assert!((got - want).abs() <= 1e-9 * want.max(1.0), "{}x{} {what}: {got} vs {want}", d.rows, d.cols);
}

#[test]
fn every_plan_matches_brute_force_on_tiny_cases_with_ties() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for _ in 0..300 {
        let (m, n) = shape(&mut rng, 6);
        let d = random(m, n, if rng.gen() { 3 } else { 1000 }, &mut rng);
        let want = brute_force(&d, 1);
        for plan in plans(rng.gen_range(0..=m)) {
            assert_optimum(&d, solved(&d, 1, plan), want, format_args!("{plan:?}"));
        }
    }
}

#[test]
fn repeats_match_brute_force_and_one_repeat_is_the_plain_problem() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for _ in 0..300 {
        let (repeat, d) = with_repeats(&mut rng, 3, 1..=4);
        let want = brute_force(&d, repeat);
        for plan in plans(rng.gen_range(0..=d.rows)) {
            assert_optimum(&d, solved(&d, repeat, plan), want, format_args!("x{repeat} {plan:?}"));
        }
        if d.rows <= d.cols {
            let plain = solve_with_duals(&d, &ProgressBar::hidden());
            let once = solve_repeat(&d, 1, &ProgressBar::hidden());
            assert_eq!(plain.assignment, once.assignment);
            assert!((d.cost(&plain.assignment) - brute_force(&d, 1)).abs() <= 1e-9 * want.max(1.0));
        }
    }
    // As many uses as patches: every patch takes its own best tile.
    let d = random(7, 3, 1000, &mut rng);
    let free: f64 = (0..7).map(|i| d.row(i).iter().copied().fold(f64::INFINITY, f64::min)).sum();
    assert_eq!(d.cost(&solve_repeat(&d, 100, &ProgressBar::hidden()).assignment), free);
}

#[test]
fn every_plan_is_certified_with_equal_costs_at_awkward_sizes() {
    // Whole or half numbers: every plan's optimum sums to the same f64 exactly.
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    let integer = |m: usize, n: usize, rng: &mut ChaCha8Rng| {
        DistanceMatrix::new(m, n, (0..m * n).map(|_| (rng.gen::<f64>() * n as f64).floor()).collect()).unwrap()
    };
    let cases = [
        random(40, 90, 1_000_000, &mut rng),
        random(50, 50, 4, &mut rng),
        random(77, 77, 1_000_000, &mut rng),
        integer(97, 97, &mut rng),
        integer(61, 130, &mut rng),
        random(1, 30, 100, &mut rng),
        random(1, 1, 100, &mut rng),
        DistanceMatrix::new(3, 3, vec![0.0; 9]).unwrap(),
        DistanceMatrix::new(5, 9, vec![2.0; 45]).unwrap(),
    ];
    for d in cases {
        for repeat in [1, 3] {
            let costs: Vec<f64> = plans(d.rows / 2).into_iter().map(|plan| solved(&d, repeat, plan)).collect();
            assert!(costs.iter().all(|&c| c == costs[0]), "{}x{} x{repeat}: {costs:?}", d.rows, d.cols);
        }
    }
}

#[test]
fn photomosaic_matrices_are_certified_with_equal_costs() {
    // Patches of a photo against crops of other photos, square and wide (whole numbers).
    for (m, n) in [(96, 96), (80, 200)] {
        let d = crate::costs::matrix(crate::costs::Kind::Photo, m, n, 3).unwrap();
        let costs: Vec<f64> = plans(m / 3).into_iter().map(|plan| solved(&d, 1, plan)).collect();
        assert!(costs.iter().all(|&c| c == costs[0]), "{m}x{n}: {costs:?}");
    }
    let d = crate::bench::matrix(60, 200, 4);
    for repeat in [1, 3] {
        for plan in plans(20) {
            solved(&d, repeat, plan);
        }
    }
}

#[test]
fn short_lists_grow_to_the_optimum() {
    // Lists of 1 or 2 columns grow on almost every search (to the whole row past n / 4):
    // the optimum is still the brute force's, and certified.
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    for _ in 0..300 {
        let (repeat, d) = with_repeats(&mut rng, 2, 4..=9);
        let first_list = rng.gen_range(1..=2);
        let plan = Plan { initialise: rng.gen(), first_list, dense_after: usize::MAX, adaptive: false };
        assert_optimum(&d, solved(&d, repeat, plan), brute_force(&d, repeat), format_args!("x{repeat}"));
    }
}

#[test]
fn rows_wanting_the_same_tiles_are_certified() {
    // Every row likes the same few columns (as a photo's sky likes the same tiles): the
    // searches reach many rows and grow their lists, and the initialisation's bids are
    // small (a price war it cuts short); the certificate checks every entry.
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    for (m, n, noise) in [(150, 700, 1.0), (120, 120, 1.0), (90, 90, 1e-9), (70, 70, 0.0)] {
        let base: Vec<f64> = (0..n).map(|_| rng.gen_range(0.0..100.0)).collect();
        let data = (0..m * n).map(|k| base[k % n] + noise * rng.gen_range(0.0..1.0)).collect();
        let d = DistanceMatrix::new(m, n, data).unwrap();
        for repeat in [1, 2] {
            for plan in plans(m / 2) {
                solved(&d, repeat, plan);
            }
        }
    }
}

#[test]
fn single_row_takes_its_minimum() {
    let d = DistanceMatrix::new(1, 4, vec![3.0, 1.0, 2.0, 1.0]).unwrap();
    assert_eq!(d.cost(&solve(&d, &ProgressBar::hidden())), 1.0);
}
