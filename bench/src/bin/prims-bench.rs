//! `prims-bench`: the engine primitives at the sizes of the foundation issue's acceptance
//! (scan of 2^28 u32, radix sort of 2^26 pairs, 40 complex 512x512 FFTs forward + inverse),
//! each as GPU ms (median of timestamps), CPU reference ms, and the bandwidth floor from the
//! copy bandwidth measured in the same run. One JSON line per measurement.

use std::time::Instant;

use anyhow::Result;
use clap::Parser;
use engine::{Context, Location, Recorder};
use serde_json::json;

#[derive(Parser)]
#[command(about = "Benchmark the engine primitives against CPU references and the copy-bandwidth floor")]
struct Args {
    /// Small sizes (a smoke test on lavapipe)
    #[arg(long)]
    quick: bool,
    /// Device index or name substring
    #[arg(long)]
    device: Option<String>,
    /// Timed repetitions per primitive (the median is reported)
    #[arg(long, default_value_t = 10)]
    repeats: u32,
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

/// Records `body` once to warm up, then `repeats` times with a timestamp after each; returns
/// the median GPU ms of one repetition.
fn gpu_median(ctx: &Context, repeats: u32, mut body: impl FnMut(&mut Recorder) -> engine::Result<()>) -> Result<f64> {
    let mut warm = ctx.recorder()?;
    body(&mut warm)?;
    warm.submit()?.wait()?;
    let mut rec = ctx.recorder()?;
    rec.enable_profiling(repeats + 1)?;
    for _ in 0..repeats {
        body(&mut rec)?;
        rec.barrier();
        rec.mark("rep");
    }
    let passes = rec.submit()?.wait_profiled()?;
    Ok(median(passes.iter().map(|p| p.ms).collect()))
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

fn scan(ctx: &Context, floor: &Floor, n: usize, repeats: u32) -> Result<serde_json::Value> {
    use engine::prims::scan::{exclusive_cpu, Scanner};
    let data = random_u32(n, 1);
    let input = ctx.upload(&data, "scan input")?;
    let output = ctx.buffer::<u32>(n, Location::Device, "scan output")?;
    let scanner = Scanner::new(ctx)?;
    let scratch = scanner.scratch(n)?;
    let gpu = gpu_median(ctx, repeats, |rec| scanner.record_exclusive(rec, &input, &output, &scratch))?;
    let mut reference = Vec::new();
    let cpu = cpu_ms(|| reference = exclusive_cpu(&data));
    let got = ctx.download(&output)?;
    let bytes = 8.0 * n as f64;
    Ok(json!({"bench": "scan_exclusive_u32", "size": n, "gpu_ms": gpu, "cpu_ms": cpu, "floor_ms": floor.ms(bytes),
        "floor": "4n read + 4n written / measured copy bandwidth", "fraction_of_copy_bw": floor.ms(bytes) / gpu,
        "gb_per_s": bytes / (gpu * 1e-3) / 1e9, "correct": got == reference}))
}

fn main() -> Result<()> {
    let args = Args::parse();
    let ctx = Context::open(args.device.as_deref())?;
    let copy_bytes: u64 = if args.quick { 16 << 20 } else { 1 << 30 };
    let ceilings = engine::ceilings::measure(&ctx, copy_bytes, if args.quick { 64 } else { 4096 })?;
    println!(
        "{}",
        json!({"bench": "ceilings", "device": ctx.info().name, "copy_gb_per_s": ceilings.copy_gb_per_s,
        "fma_tflop_per_s": ceilings.fma_tflop_per_s})
    );
    let floor = Floor { copy_gb_per_s: ceilings.copy_gb_per_s };
    let scan_n = if args.quick { (1 << 20) + 7 } else { 1 << 28 };
    println!("{}", scan(&ctx, &floor, scan_n, args.repeats)?);
    Ok(())
}
