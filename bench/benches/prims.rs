//! Criterion benches of the engine's primitives, wall-clock per call including submission
//! and wait (the GPU-only times come from timestamps in `prims-bench` and `sweep`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use engine::prims::reduce::Reducer;
use rand::{Rng, SeedableRng};

fn random_u32(n: usize) -> Vec<u32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    (0..n).map(|_| rng.gen()).collect()
}

/// The device `TESSERA_DEVICE` names, else the default one.
fn context() -> engine::Context {
    let selector = engine::DeviceSelector::from_env().expect("TESSERA_DEVICE");
    engine::Context::open(&selector).expect("device")
}

fn reduce(c: &mut Criterion) {
    let ctx = context();
    let reducer = Reducer::new(&ctx).expect("pipelines");
    let mut group = c.benchmark_group("reduce_sum_u32");
    for n in [1usize << 16, 1 << 20] {
        let data = random_u32(n);
        let buf = ctx.upload(&data, "bench input").expect("upload");
        group.throughput(Throughput::Bytes(4 * n as u64));
        group.bench_with_input(BenchmarkId::new("gpu", n), &n, |b, _| b.iter(|| reducer.sum_u32(&buf).unwrap()));
        group.bench_with_input(BenchmarkId::new("cpu", n), &n, |b, _| {
            b.iter(|| engine::prims::reduce::sum_u32_cpu(&data))
        });
    }
    group.finish();
}

fn scan_and_sort(c: &mut Criterion) {
    let ctx = context();
    let scanner = engine::prims::scan::Scanner::new(&ctx).expect("pipelines");
    let sorter = engine::prims::sort::Sorter::new(&ctx).expect("pipelines");
    let n = 1usize << 20;
    let data = random_u32(n);
    let input = ctx.upload(&data, "bench input").expect("upload");
    let values = ctx.upload(&data, "bench values").expect("upload");
    let mut group = c.benchmark_group("scan_sort_u32");
    group.throughput(Throughput::Bytes(4 * n as u64));
    group.bench_function(BenchmarkId::new("scan_gpu", n), |b| b.iter(|| scanner.exclusive(&input).unwrap()));
    group.bench_function(BenchmarkId::new("scan_cpu", n), |b| b.iter(|| engine::prims::scan::exclusive_cpu(&data)));
    group.bench_function(BenchmarkId::new("sort_gpu", n), |b| b.iter(|| sorter.sort_pairs(&input, &values).unwrap()));
    group.bench_function(BenchmarkId::new("sort_cpu", n), |b| {
        b.iter(|| engine::prims::sort::sort_pairs_cpu(&data, &data))
    });
    group.finish();
}

fn fft(c: &mut Criterion) {
    use engine::prims::fft::{Direction, Fft2d};
    let ctx = context();
    let (size, batch) = (256usize, 4usize);
    let host: Vec<[f32; 2]> = random_u32(size * size * batch).iter().map(|&v| [(v >> 8) as f32 * 1e-7, 0.5]).collect();
    let plan = Fft2d::new(&ctx, size, size, batch).expect("plan");
    let mut group = c.benchmark_group("fft2d");
    group.throughput(Throughput::Bytes(8 * host.len() as u64));
    group.bench_function(BenchmarkId::new("gpu_forward", size), |b| {
        b.iter(|| plan.transform(&host, Direction::Forward).unwrap())
    });
    group.finish();
}

criterion_group!(benches, reduce, scan_and_sort, fft);
criterion_main!(benches);
