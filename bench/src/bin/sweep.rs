//! `sweep`: runs a named kernel over a grid of workgroup sizes and problem sizes and writes
//! `<out>/<kernel>.csv` and `<out>/<kernel>.png`.

use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use clap::Parser;

#[derive(Parser)]
#[command(about = "Run a GPU kernel over a parameter grid; write CSV and a PNG plot")]
struct Args {
    /// Kernel name (see --list)
    #[arg(long, default_value = "copy")]
    kernel: String,
    /// Workgroup sizes, comma separated (default: all the kernel accepts)
    #[arg(long, value_delimiter = ',')]
    workgroups: Vec<u32>,
    /// Problem sizes in elements, comma separated; suffixes K and M (powers of two) allowed
    #[arg(long, value_delimiter = ',', default_value = "64K,1M,16M")]
    sizes: Vec<String>,
    /// Output folder
    #[arg(long, default_value = "out/sweep")]
    out: PathBuf,
    /// Device index or name substring
    #[arg(long)]
    device: Option<String>,
    /// List the kernels and exit
    #[arg(long)]
    list: bool,
    /// One JSON line per point on stdout
    #[arg(long)]
    json: bool,
}

fn parse_size(s: &str) -> Result<u64> {
    let s = s.trim();
    let (digits, mult) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let n: u64 = digits.parse().with_context(|| format!("bad size {s:?}"))?;
    Ok(n * mult)
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.list {
        for k in tessera_bench::kernels::all() {
            println!("{} (workgroups {:?})", k.name(), k.workgroups());
        }
        return Ok(());
    }
    let Some(kernel) = tessera_bench::kernels::by_name(&args.kernel) else {
        bail!("unknown kernel {:?}; try --list", args.kernel);
    };
    let sizes = args.sizes.iter().map(|s| parse_size(s)).collect::<Result<Vec<_>>>()?;
    let workgroups = if args.workgroups.is_empty() { kernel.workgroups() } else { args.workgroups.clone() };
    let ctx = engine::Context::open(args.device.as_deref())?;
    let max_wg = ctx.info().max_workgroup_invocations;
    let mut points = Vec::new();
    for &wg in workgroups.iter().filter(|&&w| w <= max_wg) {
        for &size in &sizes {
            let (ms, bytes) = match kernel.run(&ctx, wg, size) {
                Ok(r) => r,
                // A workgroup size this device cannot run (shared memory, invocations) is
                // skipped, not fatal: the sweep shows what the device can do.
                Err(engine::EngineError::Unsupported(why)) => {
                    eprintln!("sweep: skipping workgroup {wg}: {why}");
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let p = tessera_bench::Point {
                kernel: kernel.name().into(),
                workgroup: wg,
                size,
                gpu_ms: ms,
                gb_per_s: bytes as f64 / (ms * 1e-3) / 1e9,
            };
            if args.json {
                println!("{}", serde_json::to_string(&p)?);
            }
            points.push(p);
        }
    }
    if points.is_empty() {
        bail!("no point of the grid could run on {}", ctx.info().name);
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("create {}", args.out.display()))?;
    let csv = args.out.join(format!("{}.csv", kernel.name()));
    std::fs::write(&csv, tessera_bench::to_csv(&points))?;
    let png = args.out.join(format!("{}.png", kernel.name()));
    let title = format!("{} on {}", kernel.name(), ctx.info().name);
    tessera_bench::plot::draw(&points, &title, &png)?;
    if !args.json {
        let best = points.iter().max_by(|a, b| a.gb_per_s.total_cmp(&b.gb_per_s)).unwrap();
        println!(
            "sweep {}: {} points on {}; best {:.1} GB/s (wg {}, {} elements); wrote {} and {}",
            kernel.name(),
            points.len(),
            ctx.info().name,
            best.gb_per_s,
            best.workgroup,
            best.size,
            csv.display(),
            png.display()
        );
    }
    Ok(())
}
