//! `prims-bench`: the engine primitives at the sizes of the foundation issue's acceptance
//! (scan of 2^28 u32, radix sort of 2^26 pairs, 40 complex 512x512 and 40 1920x1080 FFTs
//! forward + inverse),
//! each as GPU ms (median of timestamps), CPU reference ms, and the bandwidth floor from the
//! copy bandwidth measured in the same run. One line (one JSON envelope under `--json`) per
//! measurement.

use std::time::Instant;

use anyhow::Result;
use clap::Parser;
use engine::{Context, Location, Recorder};

mod records;

use records::{CeilingsLine, FftLine, GemmLine, ReduceLine, ScanLine, SortLine, Timing};

#[derive(Parser)]
#[command(
    name = "prims-bench",
    version,
    about = "Benchmark the engine primitives against CPU references and the copy-bandwidth floor",
    after_help = "Examples:\n  prims-bench --json\n  prims-bench --quick --repeats 3 --device llvmpipe"
)]
struct Cli {
    /// Small sizes (a smoke test on lavapipe)
    #[arg(long)]
    quick: bool,
    /// Timed repetitions per primitive, 1 to 1000 (the median is reported)
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeats: u32,
    #[command(flatten)]
    run: kit::cli::RunArgs,
}

/// Deterministic, fast pseudo-random u32s (xorshift64*), non-zero.
fn random_u32(n: usize, seed: u64) -> Vec<u32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            ((s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32) | 1
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The median GPU ms of one repetition of `body`, at full clocks.
fn gpu_median(ctx: &Context, repeats: u32, body: impl FnMut(&mut Recorder) -> engine::Result<()>) -> Result<f64> {
    Ok(median(tessera_bench::time_repetitions(ctx, repeats, engine::ceilings::WARM_UP, body)?))
}

fn cpu_ms(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e3
}

struct Floor {
    copy_gb_per_s: f64,
}

impl Floor {
    fn ms(&self, bytes: f64) -> f64 {
        bytes / (self.copy_gb_per_s * 1e9) * 1e3
    }
}

fn scan(ctx: &Context, floor: &Floor, n: usize, repeats: u32) -> Result<ScanLine> {
    use engine::prims::scan::{exclusive_cpu, Scanner};
    let data = random_u32(n, 1);
    let input = ctx.upload(&data, "scan input")?;
    let output = ctx.buffer::<u32>(n, Location::Device, "scan output")?;
    // The shape `sweep --tune` chose for this device, else the built-in default.
    let shape = tessera_bench::tuned::scan_config(ctx.info());
    let scanner = Scanner::with_config(ctx, shape)?;
    let scratch = scanner.scratch(n)?;
    let gpu = gpu_median(ctx, repeats, |rec| scanner.record_exclusive(rec, &input, &output, &scratch))?;
    let mut reference = Vec::new();
    let cpu = cpu_ms(|| reference = exclusive_cpu(&data));
    let got = ctx.download(&output)?;
    let bytes = 8.0 * n as f64;
    Ok(ScanLine {
        bench: "scan_exclusive_u32",
        size: n,
        workgroup: shape.workgroup,
        items_per_invocation: shape.items,
        timing: Timing {
            gpu_ms: gpu,
            cpu_ms: cpu,
            floor_ms: floor.ms(bytes),
            floor: "4n read + 4n written / measured copy bandwidth",
        },
        fraction_of_copy_bw: floor.ms(bytes) / gpu,
        gb_per_s: bytes / (gpu * 1e-3) / 1e9,
        correct: got == reference,
    })
}

fn sort(ctx: &Context, floor: &Floor, n: usize, repeats: u32) -> Result<SortLine> {
    use engine::prims::sort::{sort_pairs_cpu, Sorter};
    let keys_host = random_u32(n, 2);
    let values_host: Vec<u32> = (0..n as u32).collect();
    let keys = ctx.upload(&keys_host, "sort keys")?;
    let values = ctx.upload(&values_host, "sort values")?;
    let sorter = Sorter::new(ctx)?;
    let scratch = sorter.scratch::<u32>(n)?;
    // The first (warm-up) run sorts; later runs re-sort sorted data, which costs a radix sort
    // the same (every pass still moves every pair).
    let gpu = gpu_median(ctx, repeats, |rec| sorter.record_sort_pairs(rec, &keys, &values, &scratch))?;
    let mut reference = (Vec::new(), Vec::new());
    let cpu = cpu_ms(|| reference = sort_pairs_cpu(&keys_host, &values_host));
    let correct = ctx.download(&keys)? == reference.0 && ctx.download(&values)? == reference.1;
    // Four 8-bit passes, each reading keys and values twice (histogram + scatter) and
    // writing them once: the fewest bytes an LSD radix sort of this shape must move.
    let bytes = 4.0 * (8.0 + 8.0 + 4.0) * n as f64;
    let ideal = 16.0 * n as f64;
    Ok(SortLine {
        bench: "radix_sort_u32_pairs",
        size: n,
        timing: Timing {
            gpu_ms: gpu,
            cpu_ms: cpu,
            floor_ms: floor.ms(ideal),
            floor: "one read + one write of keys and values / copy bandwidth",
        },
        cpu: "rayon par_sort_by_key (stable)",
        passes_floor_ms: floor.ms(bytes),
        mkeys_per_s: n as f64 / (gpu * 1e-3) / 1e6,
        correct,
    })
}

fn reductions(ctx: &Context, floor: &Floor, m: usize, n: usize, repeats: u32) -> Result<[ReduceLine; 2]> {
    use engine::prims::reduce::{col_sums_cpu, row_sums_cpu, Reducer};
    let host: Vec<f32> = random_u32(m * n, 3).into_iter().map(|v| (v >> 8) as f32 / 16777216.0).collect();
    let matrix = ctx.upload(&host, "matrix")?;
    let reducer = Reducer::new(ctx)?;
    let rows = ctx.buffer::<f32>(m, Location::Device, "row sums")?;
    let cols = ctx.buffer::<f32>(n, Location::Device, "col sums")?;
    let scratch = ctx.buffer::<f32>(reducer.col_sums_scratch_len(m, n), Location::Device, "col scratch")?;
    let row_ms = gpu_median(ctx, repeats, |rec| reducer.record_row_sums(rec, &matrix, m, n, &rows))?;
    let col_ms = gpu_median(ctx, repeats, |rec| reducer.record_col_sums(rec, &matrix, m, n, &scratch, &cols))?;
    let row_cpu = cpu_ms(|| drop(row_sums_cpu(&host, m, n)));
    let col_cpu = cpu_ms(|| drop(col_sums_cpu(&host, m, n)));
    let bytes = 4.0 * (m * n) as f64;
    let line = |bench: &'static str, gpu: f64, cpu: f64| ReduceLine {
        bench,
        size: [m, n],
        timing: Timing {
            gpu_ms: gpu,
            cpu_ms: cpu,
            floor_ms: floor.ms(bytes),
            floor: "one read of the matrix / copy bandwidth",
        },
        fraction_of_copy_bw: floor.ms(bytes) / gpu,
    };
    Ok([line("row_sums_f32", row_ms, row_cpu), line("col_sums_f32", col_ms, col_cpu)])
}

fn gemm(ctx: &Context, fma_tflops: f64, batch: usize, size: usize, repeats: u32) -> Result<GemmLine> {
    use engine::prims::gemm::{batched_gemm_cpu, BatchedGemm, Gemm};
    let desc = BatchedGemm::packed(batch, size, size, size);
    let len = batch * size * size;
    let a_host: Vec<f32> = random_u32(len, 4).into_iter().map(|v| (v >> 8) as f32 / 16777216.0 - 0.5).collect();
    let b_host: Vec<f32> = random_u32(len, 5).into_iter().map(|v| (v >> 8) as f32 / 16777216.0 - 0.5).collect();
    let a = ctx.upload(&a_host, "gemm a")?;
    let b = ctx.upload(&b_host, "gemm b")?;
    let c = ctx.buffer::<f32>(len, Location::Device, "gemm c")?;
    let g = Gemm::new(ctx)?;
    let gpu = gpu_median(ctx, repeats, |rec| g.record(rec, &desc, &a, &b, &c))?;
    let zeros = vec![0f32; len];
    let cpu = cpu_ms(|| drop(batched_gemm_cpu(&desc, &a_host, &b_host, &zeros)));
    let flops = 2.0 * (batch * size * size * size) as f64;
    Ok(GemmLine {
        bench: "batched_gemm_f32",
        batch,
        size,
        timing: Timing {
            gpu_ms: gpu,
            cpu_ms: cpu,
            floor_ms: flops / (fma_tflops * 1e12) * 1e3,
            floor: "FLOPs / measured FMA rate",
        },
        cpu: "f64 reference (rayon)",
        tflop_per_s: flops / (gpu * 1e-3) / 1e12,
    })
}

fn fft(ctx: &Context, floor: &Floor, [width, height]: [usize; 2], batch: usize, repeats: u32) -> Result<FftLine> {
    use engine::prims::fft::{Direction, Fft2d, Fft2dCpu};
    let len = width * height * batch;
    let host: Vec<[f32; 2]> = random_u32(2 * len, 6)
        .chunks(2)
        .map(|c| [(c[0] >> 8) as f32 / 16777216.0 - 0.5, (c[1] >> 8) as f32 / 16777216.0 - 0.5])
        .collect();
    let data = ctx.upload(&host, "fft data")?;
    let plan = Fft2d::new(ctx, width, height, batch)?;
    let gpu = gpu_median(ctx, repeats, |rec| {
        plan.record(rec, &data, Direction::Forward)?;
        plan.record(rec, &data, Direction::Inverse)
    })?;
    // The forward + inverse round trip must give the input back.
    let back = ctx.download(&data)?;
    let err = back.iter().zip(&host).map(|(a, b)| (a[0] - b[0]).abs().max((a[1] - b[1]).abs())).fold(0f32, f32::max);
    let cpu_plan = Fft2dCpu::new(width, height)?;
    let mut cpu_data: Vec<engine::prims::fft::Complex64> =
        host.iter().map(|c| engine::prims::fft::Complex64::new(c[0] as f64, c[1] as f64)).collect();
    let mut cpu_result = Ok(());
    let cpu = cpu_ms(|| {
        cpu_result = cpu_data.chunks_mut(width * height).try_for_each(|image| {
            cpu_plan.process(image, Direction::Forward)?;
            cpu_plan.process(image, Direction::Inverse)
        })
    });
    cpu_result?;
    // Floor: each of forward and inverse reads and writes the batch once (8 bytes a value).
    let bytes = 2.0 * 2.0 * 8.0 * len as f64;
    Ok(FftLine {
        bench: "fft2d_c2c_forward_inverse",
        size: [width, height],
        batch,
        timing: Timing {
            gpu_ms: gpu,
            cpu_ms: cpu,
            floor_ms: floor.ms(bytes),
            floor: "one read + one write of the batch per transform / copy bandwidth",
        },
        cpu: "rustfft f64, rows and columns in parallel (rayon)",
        passes_per_transform: plan.passes(),
        kernels: plan.kernels().join("+"),
        fraction_of_copy_bw: floor.ms(bytes) / gpu,
        round_trip_max_abs_error: err,
        correct: err < 1e-4,
    })
}

/// Runs one measurement under a spinner (each takes seconds at the full sizes).
fn step<T>(label: &str, measure: impl FnOnce() -> Result<T>) -> Result<T> {
    let spinner = kit::progress::spinner(label);
    let result = measure();
    spinner.finish_and_clear();
    result
}

fn main() -> std::process::ExitCode {
    kit::main(env!("CARGO_PKG_VERSION"), run)
}

fn run(cli: Cli) -> Result<()> {
    let (quick, repeats) = (cli.quick, cli.repeats);
    let ctx = cli.run.context()?;
    let copy_bytes: u64 = if quick { 16 << 20 } else { 1 << 30 };
    let ceilings =
        step("ceilings", || Ok(engine::ceilings::measure(&ctx, copy_bytes, if quick { 64 } else { 4096 })?))?;
    kit::emit(&CeilingsLine::from(&ceilings), &[]);
    let floor = Floor { copy_gb_per_s: ceilings.copy_gb_per_s };
    let scan_n = if quick { (1 << 20) + 7 } else { 1 << 28 };
    kit::emit(&step("scan", || scan(&ctx, &floor, scan_n, repeats))?, &[]);
    let sort_n = if quick { 100_003 } else { 1 << 26 };
    kit::emit(&step("sort", || sort(&ctx, &floor, sort_n, repeats))?, &[]);
    let (m, n) = if quick { (100, 333) } else { (2048, 8192) };
    for line in step("reductions", || reductions(&ctx, &floor, m, n, repeats))? {
        kit::emit(&line, &[]);
    }
    // 40 images: one MAD pair's 20 log-Gabor bands of both images, as its appearance stage
    // transforms them; the 1920x1080 line is the mixed-radix path (rows of 1920 = 2^7 3 5,
    // columns of 1080 = 2^3 3^3 5), the quick one a mixed-radix size too.
    let sizes: &[([usize; 2], usize)] =
        if quick { &[([64, 64], 3), ([60, 45], 2)] } else { &[([512, 512], 40), ([1920, 1080], 40)] };
    for &(size, batch) in sizes {
        kit::emit(&step("fft", || fft(&ctx, &floor, size, batch, repeats))?, &[]);
    }
    let batch = if quick { 10 } else { 20_000 };
    kit::emit(&step("gemm", || gemm(&ctx, ceilings.fma_tflop_per_s, batch, 64, repeats))?, &[]);
    Ok(())
}
