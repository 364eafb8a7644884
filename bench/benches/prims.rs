//! Criterion benches of the engine's primitives, wall-clock per call including submission
//! and wait (the GPU-only times come from timestamps in `prims-bench` and `sweep`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use engine::prims::reduce::Reducer;
use rand::{Rng, SeedableRng};

fn random_u32(n: usize) -> Vec<u32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    (0..n).map(|_| rng.gen()).collect()
}

fn reduce(c: &mut Criterion) {
    let ctx = engine::Context::open(std::env::var("TESSERA_DEVICE").ok().as_deref()).expect("device");
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

criterion_group!(benches, reduce);
criterion_main!(benches);
