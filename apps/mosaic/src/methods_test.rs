//! Every method on the shapes that break assignment code: m = 1, m = n, ties, all zeros.

use crate::anneal::AnnealParams;
use crate::matrix::DistanceMatrix;
use crate::softassign::SoftAssignParams;
use crate::solve::{run, Method, SolveOptions};
use kit::Backend;

fn options(backend: Backend) -> SolveOptions {
    SolveOptions {
        backend,
        softassign: SoftAssignParams { iterations: 30, ..Default::default() },
        anneal: AnnealParams { levels: 20, ..Default::default() },
        repeat: 1,
        spacing: None,
    }
}

fn shapes() -> Vec<DistanceMatrix> {
    vec![
        DistanceMatrix::new(1, 1, vec![2.0]).unwrap(),
        DistanceMatrix::new(1, 5, vec![4.0, 3.0, 3.0, 9.0, 3.0]).unwrap(),
        DistanceMatrix::new(4, 4, vec![1.0; 16]).unwrap(),
        DistanceMatrix::new(3, 7, vec![0.0; 21]).unwrap(),
        crate::bench::matrix(12, 12, 8),
        crate::bench::matrix(9, 31, 8),
    ]
}

#[test]
fn every_method_returns_a_valid_assignment_no_better_than_exact() {
    let ctx = engine::testing::context();
    for d in shapes() {
        let optimum = run(Method::Exact, &d, &options(Backend::Cpu), None).unwrap().cost;
        for method in [Method::Greedy, Method::Anneal, Method::Softassign] {
            for backend in [Backend::Cpu, Backend::Gpu] {
                if method != Method::Softassign && backend == Backend::Gpu {
                    continue;
                }
                let solved = run(method, &d, &options(backend), Some(ctx)).unwrap();
                d.check_assignment(&solved.assignment).unwrap();
                assert!(solved.cost >= optimum - 1e-9 * optimum.max(1.0), "{method:?} beat the optimum");
            }
        }
    }
    engine::testing::assert_no_validation_messages();
}

#[test]
fn every_method_honours_the_repeat_and_none_beats_exact() {
    let ctx = engine::testing::context();
    // Tall matrices (more patches than tiles) and a wide one where repeats still help.
    for (m, n, repeat) in [(12, 4, 3), (30, 7, 5), (9, 9, 2), (5, 1, 5), (20, 12, 2)] {
        let d = crate::bench::matrix(m, n, m as u64);
        let opts = |backend| SolveOptions { repeat, ..options(backend) };
        let optimum = run(Method::Exact, &d, &opts(Backend::Cpu), None).unwrap().cost;
        for (method, backend) in [
            (Method::Greedy, Backend::Cpu),
            (Method::Anneal, Backend::Cpu),
            (Method::Softassign, Backend::Cpu),
            (Method::Softassign, Backend::Gpu),
        ] {
            let solved = run(method, &d, &opts(backend), Some(ctx)).unwrap();
            d.check_uses(&solved.assignment, repeat).unwrap();
            assert!(solved.cost >= optimum - 1e-9 * optimum.max(1.0), "{method:?} x{repeat} beat the optimum");
        }
        let err = run(Method::Greedy, &d, &SolveOptions { repeat: repeat - 1, ..options(Backend::Cpu) }, None);
        if m > n * (repeat - 1) {
            let message = err.expect_err("too few uses is an error").to_string();
            assert!(message.contains(&format!("--repeat {} is the smallest", m.div_ceil(n))), "{message}");
        }
    }
    engine::testing::assert_no_validation_messages();
}

#[test]
fn every_method_keeps_tiles_apart_checked_on_every_pair_of_cells() {
    let ctx = engine::testing::context();
    // (cols, rows, tiles, distance, repeat): unlimited repeats, a repeat that binds too, a
    // distance as wide as the grid, and the fewest tiles the distance allows.
    for (cols, rows, n, distance, repeat) in [
        (7, 5, 12, 1, usize::MAX),
        (6, 6, 20, 2, 3),
        (5, 3, 9, 2, usize::MAX),
        (4, 4, 4, 1, usize::MAX),
        (9, 2, 30, 8, 1),
    ] {
        let m = cols * rows;
        // Rows alike (a flat target): every cell wants the same few tiles.
        let base = crate::bench::matrix(1, n, 7);
        let noise = crate::bench::matrix(m, n, m as u64);
        let data = (0..m * n).map(|k| 4.0 * base.data[k % n] + noise.data[k]).collect();
        let d = DistanceMatrix::new(m, n, data).unwrap();
        let spacing = crate::spacing::Spacing::grid(cols, rows, distance);
        let opts = |backend| SolveOptions { repeat, spacing: Some(spacing.clone()), ..options(backend) };
        let exact = run(Method::Exact, &d, &opts(Backend::Cpu), None).unwrap();
        let bound = exact.lower_bound.expect("exact reports its bound");
        assert!(bound <= exact.cost + 1e-9 * exact.cost, "bound {bound} above the cost {}", exact.cost);
        for (method, backend) in [
            (Method::Exact, Backend::Cpu),
            (Method::Exact, Backend::Gpu),
            (Method::Greedy, Backend::Cpu),
            (Method::Anneal, Backend::Cpu),
            (Method::Softassign, Backend::Cpu),
            (Method::Softassign, Backend::Gpu),
        ] {
            let solved = run(method, &d, &opts(backend), Some(ctx)).unwrap();
            let label = format!("{method:?} {backend:?} {cols}x{rows} D{distance} x{repeat}");
            assert!(crate::spacing::tests::holds_every_pair(&spacing, &solved.assignment), "{label}");
            d.check_uses(&solved.assignment, repeat).unwrap();
            assert!(solved.cost >= bound - 1e-9 * bound, "{label}: {} under the lower bound {bound}", solved.cost);
        }
    }
    // Fewer tiles than a window of cells: refused before any solve.
    let d = crate::bench::matrix(9, 3, 1);
    let spacing = crate::spacing::Spacing::grid(3, 3, 1);
    let err =
        run(Method::Greedy, &d, &SolveOptions { repeat: 9, spacing: Some(spacing), ..options(Backend::Cpu) }, None);
    assert!(err.unwrap_err().to_string().contains("needs at least 4 tiles"));
    engine::testing::assert_no_validation_messages();
}

#[test]
fn cpu_softassign_with_defaults_is_within_three_percent() {
    for (m, n, seed) in [(30, 30, 1), (25, 100, 2)] {
        let d = crate::bench::matrix(m, n, seed);
        let optimum = run(Method::Exact, &d, &SolveOptions::default(), None).unwrap().cost;
        let solved = run(Method::Softassign, &d, &options(Backend::Cpu).with_default_softassign(), None).unwrap();
        let ratio = solved.cost / optimum;
        assert!(ratio < 1.03, "{m}x{n}: softassign / exact = {ratio}");
    }
}

impl SolveOptions {
    fn with_default_softassign(mut self) -> Self {
        self.softassign = SoftAssignParams::default();
        self
    }
}
