use std::time::Instant;

use engine::testing;
use engine::Context;
use indicatif::ProgressBar;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::cpu::auction::CpuAuction;
use crate::error::Result;
use crate::exact;
use crate::gpu::auction::{solve, GpuAuction};

/// Times one exact solve of the seeded photomosaic-like m x n matrix of `mosaic bench`
/// (after one untimed warm-up solve, which also creates the pipelines): the total
/// milliseconds (upload, auction, repair, certificate; not building D) with the solution.
fn bench(ctx: &Context, m: usize, n: usize, seed: u64) -> Result<(f64, ExactSolution)> {
    let d = crate::bench::matrix(m, n, seed);
    solve(ctx, &d, &ProgressBar::hidden())?;
    let start = Instant::now();
    let solution = solve(ctx, &d, &ProgressBar::hidden())?;
    Ok((start.elapsed().as_secs_f64() * 1e3, solution))
}

fn matrix(m: usize, n: usize, rng: &mut ChaCha8Rng, value: impl Fn(&mut ChaCha8Rng) -> f64) -> DistanceMatrix {
    DistanceMatrix::new(m, n, (0..m * n).map(|_| value(rng)).collect()).unwrap()
}

/// The matrices every exact test runs on: random f64 and f32-valued, many ties, duplicate
/// columns, m = n, m << n, photomosaic-like, all zeros, single row and column.
fn cases() -> Vec<(&'static str, DistanceMatrix)> {
    let mut rng = ChaCha8Rng::seed_from_u64(18);
    let uniform = |r: &mut ChaCha8Rng| r.gen_range(0.0..1000.0);
    let mut duplicated = matrix(40, 90, &mut rng, uniform);
    for i in 0..40 {
        for j in 45..90 {
            duplicated.data[i * 90 + j] = duplicated.data[i * 90 + j - 45];
        }
    }
    vec![
        ("f64", matrix(37, 53, &mut rng, uniform)),
        ("f32", matrix(61, 200, &mut rng, |r| r.gen_range(0.0f32..3.0) as f64)),
        ("ties", matrix(50, 70, &mut rng, |r| r.gen_range(0..4) as f64)),
        ("ties square", matrix(64, 64, &mut rng, |r| r.gen_range(0..4) as f64)),
        ("duplicate columns", duplicated),
        ("square", matrix(100, 100, &mut rng, uniform)),
        ("wide", matrix(5, 300, &mut rng, |r| r.gen_range(1e-3..1e6))),
        ("photomosaic", crate::bench::matrix(60, 200, 4)),
        ("zeros", DistanceMatrix::new(3, 4, vec![0.0; 12]).unwrap()),
        ("1x1", DistanceMatrix::new(1, 1, vec![7.5]).unwrap()),
        ("1xn", DistanceMatrix::new(1, 5, vec![3.0, 1.0, 2.0, 1.0, 4.0]).unwrap()),
    ]
}

fn assert_optimal(name: &str, d: &DistanceMatrix, assignment: &[usize], gap: f64) {
    let mut sorted = assignment.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    assert!(sorted.len() == d.rows && sorted.iter().all(|&j| j < d.cols), "{name}: not an assignment");
    let want = d.cost(&exact::solve(d, &ProgressBar::hidden()));
    let got = d.cost(assignment);
    let tol = 1e-9 * want.max(scale_of(d));
    assert!((got - want).abs() <= tol, "{name}: cost {got} vs exact {want}");
    assert!(gap.abs() <= tol, "{name}: duality gap {gap}");
}

/// Every row assigned within eps of its cheapest column (in f32, up to a few ulps of
/// rounding), and no unassigned column above lambda: the end state of every phase.
fn assert_rectangular_eps_cs(cpu: &CpuAuction, dn: &[f32], n: usize, eps: f32, what: &str) {
    let lambda = cpu.lambda().expect("rows assigned");
    for (j, (&p, &owner)) in cpu.prices.iter().zip(&cpu.owner).enumerate() {
        assert!(owner != NONE || p <= lambda, "{what}: unassigned column {j} at {p} above lambda {lambda}");
    }
    for (i, &j) in cpu.col4row.iter().enumerate() {
        let row = &dn[i * n..(i + 1) * n];
        let best = row.iter().zip(&cpu.prices).map(|(&x, &p)| x + p).fold(f32::MAX, f32::min);
        let own = row[j as usize] + cpu.prices[j as usize];
        assert!(own - best <= eps + 1e-6, "{what}: row {i} is {} above its best", own - best);
    }
}

/// The device's D is the normalised one, and the reverse rounds' copy its exact transpose,
/// at wide shapes with partial tiles, and one wider than a grid axis holds in tiles (uploaded
/// in three chunks of rows); a square D has no copy (no reverse round runs).
#[test]
fn the_device_holds_normalised_d_and_its_transpose() {
    let ctx = testing::context();
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    for (m, n) in [(1, 2), (37, 101), (63, 64), (3, 2_100_000), (64, 64)] {
        let d = matrix(m, n, &mut rng, |r| r.gen_range(0.01..1000.0));
        let scale = scale_of(&d);
        let gpu = GpuAuction::new(ctx, m, n).unwrap();
        gpu.load_scaled(&d, scale).unwrap();
        let dn = normalised(&d, scale);
        let want: Vec<f32> = (0..n * m).map(|k| dn[(k % m) * n + k / m]).collect();
        let got = gpu.transposed().unwrap();
        assert!(got == (m < n).then_some(want), "{m}x{n}: the transpose differs");
    }
    testing::assert_no_validation_messages();
}

/// GPU and CPU auctions agree bit for bit on prices and assignment after the forward and
/// the reverse rounds of every phase, at awkward shapes with random non-zero entries, a
/// wide one with duplicate columns and a photomosaic-like one (where reverse rounds have
/// most to do); each phase ends epsilon-optimal for the rectangular problem.
#[test]
fn gpu_auction_matches_cpu_twin_after_every_phase() {
    let ctx = testing::context();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut reverse_rounds = 0;
    let mut tail_rounds = 0;
    let (mut forward_rounds, mut forward_tail_rounds) = (0, 0);
    let mut cases: Vec<DistanceMatrix> = [(37, 53), (100, 100), (61, 200), (1, 3), (3, 3), (40, 400)]
        .into_iter()
        .map(|(m, n)| matrix(m, n, &mut rng, |r| r.gen_range(0.01..1.0)))
        .collect();
    for i in 0..40 {
        for j in 200..400 {
            cases[5].data[i * 400 + j] = cases[5].data[i * 400 + j - 200];
        }
    }
    cases.push(crate::bench::matrix(150, 1000, 3));
    for d in cases {
        let (m, n) = (d.rows, d.cols);
        let scale = scale_of(&d);
        let dn = normalised(&d, scale);
        let gpu = GpuAuction::new(ctx, m, n).unwrap();
        gpu.load_scaled(&d, scale).unwrap();
        let mut cpu = CpuAuction::new(&dn, m, n);
        for (k, &eps) in epsilons().iter().enumerate() {
            if k > 0 {
                gpu.next_phase().unwrap();
                cpu.next_phase();
            }
            let stage = gpu.forward(eps).unwrap();
            assert!(stage.done, "{m}x{n}: phase {k} left rows unassigned");
            forward_tail_rounds += stage.tail;
            let before = cpu.rounds;
            cpu.forward(eps);
            forward_rounds += cpu.rounds - before;
            let got = gpu.state(0, 0).unwrap();
            assert_eq!(got.col4row, cpu.col4row, "{m}x{n}: assignment after the forward rounds of phase {k}");
            assert_eq!(got.prices, cpu.prices, "{m}x{n}: prices after the forward rounds of phase {k}");
            tail_rounds += gpu.reverse(eps).unwrap().tail;
            let before = cpu.reverse_rounds;
            cpu.reverse(eps);
            reverse_rounds += cpu.reverse_rounds - before - 1;
            let got = gpu.state(0, 0).unwrap();
            assert_eq!(got.col4row, cpu.col4row, "{m}x{n}: assignment after the reverse rounds of phase {k}");
            assert_eq!(got.prices, cpu.prices, "{m}x{n}: prices after the reverse rounds of phase {k}");
            assert_rectangular_eps_cs(&cpu, &dn, n, eps, &format!("{m}x{n} phase {k}"));
        }
    }
    assert!(reverse_rounds > 0, "no reverse round did anything");
    // Both kinds of reverse round ran: the tail kernel's and the Jacobi passes'.
    assert!(tail_rounds > 0 && tail_rounds < reverse_rounds, "tail rounds {tail_rounds} of {reverse_rounds}");
    assert!(
        forward_tail_rounds > 0 && forward_tail_rounds < forward_rounds,
        "forward tail rounds {forward_tail_rounds} of {forward_rounds}"
    );
    testing::assert_no_validation_messages();
}

#[test]
fn gpu_exact_equals_cpu_exact() {
    let ctx = testing::context();
    for (name, d) in cases() {
        let s = solve(ctx, &d, &ProgressBar::hidden()).unwrap();
        assert_optimal(name, &d, &s.assignment, s.gap);
        assert!(!s.fallback, "{name}: the repair's certificate failed");
        assert!((s.cost - d.cost(&s.assignment)).abs() == 0.0);
    }
    testing::assert_no_validation_messages();
}

/// The repair alone (no GPU): from the CPU twin's auction, and from starts that are far from
/// optimal (all prices equal; a scrambled assignment; nothing assigned), the result is the
/// certified optimum.
#[test]
fn repair_certifies_any_start() {
    for (name, d) in cases() {
        let scale = scale_of(&d);
        let dn = normalised(&d, scale);
        let twin = CpuAuction::new(&dn, d.rows, d.cols).run(&epsilons());
        let reversed: Vec<u32> = (0..d.rows as u32).rev().collect();
        let starts = [
            twin,
            AuctionState { prices: vec![0.0; d.cols], col4row: reversed.clone(), rounds: 0, reverse_rounds: 0 },
            AuctionState {
                prices: (0..d.cols).map(|j| j as f32 * 0.01).collect(),
                col4row: reversed,
                rounds: 0,
                reverse_rounds: 0,
            },
            AuctionState { prices: vec![0.5; d.cols], col4row: vec![NONE; d.rows], rounds: 0, reverse_rounds: 0 },
        ];
        for state in starts {
            let c = repair::certify_or_repair(&d, &state, scale).unwrap();
            assert_optimal(name, &d, &c.assignment, c.gap);
            assert!(!c.fallback, "{name}: the repair's certificate failed");
        }
    }
}

/// Not a test: the repair's cost at the benchmark's sizes, from the CPU twin's prices
/// (`cargo test --release -p tessera-mosaic --lib repair_timing -- --ignored --nocapture`).
#[test]
#[ignore]
fn repair_timing() {
    for (m, n) in [(900, 8192), (2048, 8192)] {
        let d = crate::bench::matrix(m, n, 1);
        let scale = scale_of(&d);
        let dn = normalised(&d, scale);
        let t = std::time::Instant::now();
        let state = CpuAuction::new(&dn, m, n).run(&epsilons());
        let auction = t.elapsed().as_secs_f64() * 1e3;
        let t = std::time::Instant::now();
        let c = repair::certify_or_repair(&d, &state, scale).unwrap();
        let repair = t.elapsed().as_secs_f64() * 1e3;
        let t = std::time::Instant::now();
        let want = d.cost(&exact::solve(&d, &ProgressBar::hidden()));
        let exact = t.elapsed().as_secs_f64() * 1e3;
        eprintln!(
            "{m}x{n}: rounds {} forward + {} reverse (CPU twin {auction:.0} ms), repaired {} rows in {repair:.0} ms, \
             gap {:e}, cost - exact {:e} (CPU exact {exact:.0} ms)",
            state.rounds,
            state.reverse_rounds,
            c.repaired_rows,
            c.gap,
            d.cost(&c.assignment) - want
        );
    }
}

/// Not a test: whole GPU exact solves ([`bench`]) at the benchmark's sizes, or at the sizes
/// in `AUCTION_SIZES` (e.g. `900x8192,2048x8192,10000x10000`; `cargo test --release -p
/// tessera-mosaic --lib gpu_exact_timing -- --ignored --nocapture`).
#[test]
#[ignore]
fn gpu_exact_timing() {
    let ctx = testing::context();
    let sizes = std::env::var("AUCTION_SIZES").unwrap_or_else(|_| "900x8192,2048x8192,10000x10000".into());
    for size in sizes.split(',') {
        let (m, n) = size.split_once('x').expect("sizes like 900x8192");
        let (m, n) = (m.parse().unwrap(), n.parse().unwrap());
        let (ms, s) = bench(ctx, m, n, 1).unwrap();
        eprintln!(
            "{m}x{n}: {ms:.1} ms (auction {:.1} ms: {} forward + {} reverse rounds; repair {:.1} ms: {} rows), \
             gap {:e}, fallback {}",
            s.auction_ms, s.rounds, s.reverse_rounds, s.repair_ms, s.repaired_rows, s.gap, s.fallback
        );
    }
}

#[test]
fn whole_number_matrices_stop_at_one_cost_level() {
    let mut rng = ChaCha8Rng::seed_from_u64(19);
    let whole = matrix(30, 40, &mut rng, |r| (r.gen::<f64>() * 40.0).floor());
    let scale = scale_of(&whole);
    let eps = epsilons_for(&whole, scale);
    assert_eq!(*eps.last().unwrap(), (1.0 / scale) as f32);
    assert!(eps.len() < epsilons().len() && eps.windows(2).all(|p| p[0] > p[1]), "{eps:?}");
    let fractional = matrix(30, 40, &mut rng, |r| r.gen_range(0.0..40.0));
    assert_eq!(epsilons_for(&fractional, scale_of(&fractional)), epsilons());
    // Whole numbers too many for f32 prices to tell one level apart: the full schedule.
    let wide = matrix(3, 4, &mut rng, |r| (r.gen::<f64>() * 1e9).floor());
    assert_eq!(epsilons_for(&wide, scale_of(&wide)), epsilons());
}

/// Where the 2048 x 8192 photo auction of `mosaic bench --costs` spends its time (run on a
/// GPU: `--ignored`): each phase's stages by wall time, a replay run with nothing left to
/// do, and the GPU time of 16 rounds in one command buffer at the start of each stage.
#[test]
#[ignore]
fn round_profile() {
    let ctx = testing::context();
    let (m, n) = (2048, 8192);
    let d = crate::costs::matrix(crate::costs::Kind::Photo, m, n, (m * 31 + n) as u64).unwrap();
    let scale = scale_of(&d);
    let auction = GpuAuction::new(ctx, m, n).unwrap();
    let epsilons = epsilons_for(&d, scale);
    for profiled in [false, true] {
        auction.load_scaled(&d, scale).unwrap();
        let total = Instant::now();
        for (k, &eps) in epsilons.iter().enumerate() {
            if k > 0 {
                auction.next_phase().unwrap();
            }
            let profile = |reverse: bool| {
                let passes = auction.profile_rounds(eps, 16, reverse).unwrap();
                let ms: f64 = passes.iter().filter(|p| p.name.ends_with("round")).map(|p| p.ms).sum();
                eprintln!(
                    "phase {k}: 16 {} rounds {ms:.3} ms of GPU time",
                    if reverse { "reverse" } else { "forward" }
                );
            };
            if profiled {
                profile(false);
            }
            let start = Instant::now();
            let forward = auction.forward(eps).unwrap().rounds;
            let forward_ms = start.elapsed().as_secs_f64() * 1e3;
            let start = Instant::now();
            auction.forward(eps).unwrap();
            let empty_ms = start.elapsed().as_secs_f64() * 1e3;
            if profiled {
                profile(true);
            }
            let start = Instant::now();
            let reverse = auction.reverse(eps).unwrap().rounds;
            let reverse_ms = start.elapsed().as_secs_f64() * 1e3;
            eprintln!(
                "phase {k} eps {eps:e}: forward {forward} rounds {forward_ms:.2} ms ({:.1} us a round), \
                 an empty run {empty_ms:.3} ms, reverse {reverse} rounds {reverse_ms:.2} ms ({:.1} us a round)",
                forward_ms * 1e3 / forward.max(1) as f64,
                reverse_ms * 1e3 / reverse.max(1) as f64
            );
        }
        eprintln!("profiled {profiled}: whole auction {:.1} ms", total.elapsed().as_secs_f64() * 1e3);
    }
}
