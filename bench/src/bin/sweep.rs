//! `sweep`: runs a named kernel over a grid of workgroup sizes and problem sizes, prints
//! each point, and writes `<out>/<kernel>.csv` and `<out>/<kernel>.png` (both or neither).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use clap::Parser;
use serde::Serialize;
use tessera_bench::{args, kernels, Point, SweepKernel};

#[derive(Parser)]
#[command(
    name = "sweep",
    version,
    about = "Run a GPU kernel over a grid of workgroup and problem sizes; write CSV and a PNG plot",
    after_help = "Examples:\n  sweep --kernel scan --sizes 1M,16M --out out/sweep\n  \
                  sweep --kernel copy --workgroups 64,256 --sizes 64K,1M,4M --json\n  sweep --list"
)]
struct Cli {
    /// Kernel to run (--list shows each with the workgroup sizes it accepts)
    #[arg(long, default_value = "copy", value_parser = clap::builder::PossibleValuesParser::new(kernels::names()))]
    kernel: String,
    /// Workgroup sizes, comma separated: powers of two within the device's limit (default:
    /// every size the kernel accepts that the device runs)
    #[arg(long, value_delimiter = ',', value_parser = args::parse_workgroup)]
    workgroups: Vec<u32>,
    /// Problem sizes in elements, comma separated, from 1 to 2G; the suffixes K, M and G are
    /// powers of two
    #[arg(long, value_delimiter = ',', default_value = "64K,1M,16M", value_parser = args::parse_elements)]
    sizes: Vec<u64>,
    /// Output folder, created if missing: <kernel>.csv and <kernel>.png are written there
    #[arg(long, default_value = "out/sweep")]
    out: PathBuf,
    /// List the kernels and the workgroup sizes each accepts, and exit
    #[arg(long)]
    list: bool,
    #[command(flatten)]
    run: kit::cli::RunArgs,
}

/// One line of `--list`.
#[derive(Serialize)]
struct KernelEntry {
    kernel: &'static str,
    workgroups: Vec<u32>,
}

impl std::fmt::Display for KernelEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (workgroups {:?})", self.kernel, self.workgroups)
    }
}

/// A workgroup size the device cannot run for this kernel (shared memory, subgroups).
#[derive(Serialize)]
struct Skipped {
    workgroup: u32,
    reason: String,
}

/// The last line of a sweep: its best point and the files written.
#[derive(Serialize)]
struct Summary {
    kernel: &'static str,
    points: usize,
    best_gb_per_s: f64,
    best_workgroup: u32,
    best_size: u64,
    skipped: Vec<Skipped>,
    #[serde(skip)]
    device: String,
    #[serde(skip)]
    files: [PathBuf; 2],
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sweep {}: {} points on {}; best {:.1} GB/s (wg {}, {} elements); wrote {} and {}",
            self.kernel,
            self.points,
            self.device,
            self.best_gb_per_s,
            self.best_workgroup,
            self.best_size,
            self.files[0].display(),
            self.files[1].display()
        )?;
        for s in &self.skipped {
            write!(f, "\n  skipped wg {}: {}", s.workgroup, s.reason)?;
        }
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    kit::main(env!("CARGO_PKG_VERSION"), run)
}

fn run(cli: Cli) -> Result<()> {
    if cli.list {
        for k in kernels::all() {
            kit::emit(&KernelEntry { kernel: k.name(), workgroups: k.workgroups() }, &[]);
        }
        return Ok(());
    }
    let kernel = kernels::by_name(&cli.kernel).ok_or_else(|| anyhow!("unknown kernel {:?}", cli.kernel))?;
    let csv = cli.out.join(format!("{}.csv", kernel.name()));
    let png = cli.out.join(format!("{}.png", kernel.name()));
    kit::output::check_folder(&cli.out, &[])?;
    kit::output::check_file(&csv, &["csv"], &[])?;
    kit::output::check_file(&png, &["png"], &[])?;
    if let Some(&largest) = cli.sizes.iter().max() {
        kit::budget::check(kernel.footprint(largest), format!("sweep {} at {largest} elements", kernel.name()))?;
    }
    let ctx = cli.run.context()?;
    for &size in &cli.sizes {
        args::check_size(ctx.info(), size)?;
    }
    let workgroups = if cli.workgroups.is_empty() {
        let limit = args::workgroup_limit(ctx.info());
        kernel.workgroups().into_iter().filter(|&w| w <= limit).collect()
    } else {
        for &w in &cli.workgroups {
            args::check_workgroup(ctx.info(), w)?;
        }
        cli.workgroups.clone()
    };
    let (points, skipped) = sweep(&ctx, kernel.as_ref(), &workgroups, &cli.sizes)?;
    let Some(best) = points.iter().max_by(|a, b| a.gb_per_s.total_cmp(&b.gb_per_s)) else {
        let reasons: Vec<String> = skipped.iter().map(|s| format!("wg {}: {}", s.workgroup, s.reason)).collect();
        bail!("no point of the grid could run on {} ({})", ctx.info().name, reasons.join("; "));
    };
    write_outputs(&points, &format!("{} on {}", kernel.name(), ctx.info().name), &csv, &png)?;
    let summary = Summary {
        kernel: kernel.name(),
        points: points.len(),
        best_gb_per_s: best.gb_per_s,
        best_workgroup: best.workgroup,
        best_size: best.size,
        skipped,
        device: ctx.info().name.clone(),
        files: [csv, png],
    };
    kit::emit(&summary, &[&summary.files[0], &summary.files[1]]);
    Ok(())
}

/// Runs `kernel` at every workgroup and size, printing each point as it is measured.
fn sweep(
    ctx: &engine::Context,
    kernel: &dyn SweepKernel,
    workgroups: &[u32],
    sizes: &[u64],
) -> Result<(Vec<Point>, Vec<Skipped>)> {
    let bar = kit::progress::bar((workgroups.len() * sizes.len()) as u64, &format!("sweep {}", kernel.name()));
    let mut points = Vec::new();
    let mut skipped = Vec::new();
    for &wg in workgroups {
        for (i, &size) in sizes.iter().enumerate() {
            let (ms, bytes) = match kernel.run(ctx, wg, size) {
                Ok(r) => r,
                // A workgroup size this device cannot run (shared memory, invocations) is
                // skipped, not fatal: the sweep shows what the device can do.
                Err(engine::EngineError::Unsupported(reason)) => {
                    skipped.push(Skipped { workgroup: wg, reason });
                    bar.inc((sizes.len() - i) as u64);
                    break;
                }
                Err(e) => return Err(e.into()),
            };
            let p = Point {
                kernel: kernel.name().into(),
                workgroup: wg,
                size,
                gpu_ms: ms,
                gb_per_s: bytes as f64 / (ms * 1e-3) / 1e9,
            };
            bar.suspend(|| kit::emit(&p, &[]));
            bar.inc(1);
            points.push(p);
        }
    }
    bar.finish_and_clear();
    Ok((points, skipped))
}

/// Writes the CSV and the plot, both or neither.
fn write_outputs(points: &[Point], title: &str, csv: &Path, png: &Path) -> Result<()> {
    let mut staged = kit::output::Staged::new();
    staged.write(csv, |w| w.write_all(tessera_bench::to_csv(points).as_bytes()))?;
    staged.write(png, |w| tessera_bench::plot::write_png(points, title, w))?;
    staged.commit()?;
    Ok(())
}
