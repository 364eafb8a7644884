//! `sweep`: runs a registered kernel (engine or app) over a grid of its parameters and
//! problem sizes; every point is timed (median GPU time after a warm-up), checked against
//! the CPU reference, and reported with its floor fraction, registers, shared memory and
//! theoretical occupancy. Writes `<out>/<kernel>.csv`, `.jsonl` and PNG plots (all or
//! none). `--tune` picks each kernel's fastest checked parameters into the tuning file.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _, Result};
use clap::Parser;
use kit::tuning;
use serde::Serialize;
use tessera_bench::measure::{self, Device, Point};
use tessera_bench::registry::{self, Config, Entry, Param, Reps};
use tessera_bench::{args, output, plot};

#[derive(Parser)]
#[command(
    name = "sweep",
    version,
    about = "Run a GPU kernel of the engine or an app over a grid of its parameters and problem sizes: \
             time, floor fraction, check, registers, shared memory, occupancy; CSV, JSON lines and PNG plots",
    after_help = "Examples:\n  sweep --list\n  \
                  sweep --kernel smoe.render --param block=8,16,32 --sizes 512,1024 --out out/sweep\n  \
                  sweep --kernel engine.scan --param workgroup=256,512,1024 --sizes 1M,16M --json\n  \
                  sweep --tune --kernel engine.scan\n  sweep --tune"
)]
struct Cli {
    /// Kernel to run (--list shows each with its parameters); with --tune, the one kernel to
    /// tune (default: every kernel with parameters)
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(registry::names()))]
    kernel: Option<String>,
    /// A parameter's values, KEY=V1,V2,... (repeatable); a parameter not given takes every
    /// value it accepts with --tune, else its default
    #[arg(long = "param", value_name = "KEY=V1,V2", value_parser = parse_param)]
    params: Vec<(String, Vec<u32>)>,
    /// Shorthand for --param workgroup=... : powers of two
    #[arg(long, value_delimiter = ',', value_parser = args::parse_workgroup)]
    workgroups: Vec<u32>,
    /// Problem sizes, comma separated, in the kernel's unit (--list); the suffixes K, M and
    /// G are powers of two (default: the sizes users run, per kernel)
    #[arg(long, value_delimiter = ',', value_parser = args::parse_elements)]
    sizes: Vec<u64>,
    /// Timed repetitions per point (the median is reported)
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeats: u32,
    /// Milliseconds of GPU warm-up before each point's timed repetitions (shorter ones time
    /// large sizes at idle clocks)
    #[arg(long, default_value_t = engine::ceilings::WARM_UP_MS, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    warm_up_ms: u64,
    /// Output folder, created if missing: <kernel>.csv, <kernel>.jsonl and <kernel>.*.png
    #[arg(long, default_value = "out/sweep")]
    out: PathBuf,
    /// List the kernels with their parameters and sizes, and exit
    #[arg(long)]
    list: bool,
    /// Pick each kernel's fastest checked parameters at its sizes and write them to the
    /// tuning file, keyed by device name and driver version
    #[arg(long)]
    tune: bool,
    /// Tuning file to write (default: $TESSERA_TUNING, else
    /// $XDG_CONFIG_HOME/tessera/tuning.json, else ~/.config/tessera/tuning.json)
    #[arg(long, value_name = "PATH")]
    tuning_file: Option<PathBuf>,
    #[command(flatten)]
    run: kit::cli::RunArgs,
}

/// `KEY=V1,V2,...` (clap value parser): a key and at least one whole number.
fn parse_param(text: &str) -> Result<(String, Vec<u32>), String> {
    let (key, values) = text.split_once('=').ok_or_else(|| format!("{text:?} must look like KEY=V1,V2"))?;
    let key = key.trim();
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("{key:?} is not a parameter name"));
    }
    let values = values
        .split(',')
        .map(|v| v.trim().parse::<u32>().map_err(|_| format!("{v:?} in {text:?} is not a whole number")))
        .collect::<Result<Vec<u32>, String>>()?;
    Ok((key.to_string(), values))
}

/// One line of `--list`.
#[derive(Serialize)]
struct ListLine {
    kernel: &'static str,
    about: &'static str,
    unit: &'static str,
    params: Vec<Param>,
    sizes: &'static [u64],
}

impl std::fmt::Display for ListLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:<24} {}", self.kernel, self.about)?;
        for p in &self.params {
            write!(f, "\n    {}={:?} (default {}): {}", p.key, p.values, p.default, p.about)?;
        }
        write!(f, "\n    sizes ({}): {:?}", self.unit, self.sizes)
    }
}

/// A point the device cannot run (workgroup over its limits, shared memory).
#[derive(Serialize)]
struct Skipped {
    params: Config,
    size: u64,
    reason: String,
}

/// The last line of a sweep.
#[derive(Serialize)]
struct Summary {
    kernel: &'static str,
    points: usize,
    failed_checks: usize,
    best: Option<Point>,
    skipped: Vec<Skipped>,
    limits: &'static str,
    limits_note: String,
    copy_gb_per_s: f64,
    #[serde(skip)]
    device: String,
    #[serde(skip)]
    files: Vec<PathBuf>,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sweep {}: {} points on {}", self.kernel, self.points, self.device)?;
        if let Some(b) = &self.best {
            write!(
                f,
                "; fastest checked: {} at {} {} ({:.4} ms, {:.0}% of the floor)",
                b.params.label(),
                b.size,
                b.unit,
                b.median_ms,
                100.0 * b.floor_fraction
            )?;
        }
        write!(f, "\n  occupancy model: {}", self.limits_note)?;
        let files: Vec<String> = self.files.iter().map(|p| p.display().to_string()).collect();
        write!(f, "\n  wrote {}", files.join(", "))?;
        for s in &self.skipped {
            write!(f, "\n  skipped {} at {}: {}", s.params.label(), s.size, s.reason)?;
        }
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    kit::main(env!("CARGO_PKG_VERSION"), run)
}

fn run(cli: Cli) -> Result<()> {
    if cli.list {
        for e in &registry::ALL {
            let sizes = e.kernel.sizes();
            let line = ListLine {
                kernel: e.name,
                about: e.about,
                unit: sizes.unit,
                params: e.kernel.params(),
                sizes: sizes.default,
            };
            kit::emit(&line, &[]);
        }
        return Ok(());
    }
    if cli.tune {
        return tune(&cli);
    }
    let entry = registry::by_name(cli.kernel.as_deref().unwrap_or("engine.copy"))
        .ok_or_else(|| anyhow!("unknown kernel {:?}", cli.kernel))?;
    let values = chosen_values(entry, &cli, false)?;
    let sizes = chosen_sizes(entry, &cli)?;
    let files = output_files(entry, &cli.out);
    kit::output::check_folder(&cli.out, &[])?;
    for f in &files {
        kit::output::check_file(f, &["csv", "jsonl", "png"], &[])?;
    }
    let mut device = Device::new(cli.run.context()?)?;
    let (points, skipped) = sweep(&mut device, entry, &values, &sizes, reps(&cli))?;
    if points.is_empty() {
        let reasons: Vec<String> = skipped.iter().map(|s| format!("{}: {}", s.params.label(), s.reason)).collect();
        bail!("no point of the grid could run on {} ({})", device.ctx.info().name, reasons.join("; "));
    }
    write_outputs(&device, entry, &points, &files)?;
    let failed_checks = points.iter().filter(|p| !p.check_passed).count();
    let best =
        points.iter().filter(|p| p.check_passed).max_by(|a, b| a.floor_fraction.total_cmp(&b.floor_fraction)).cloned();
    let summary = Summary {
        kernel: entry.name,
        points: points.len(),
        failed_checks,
        best,
        skipped,
        limits: device.limits.preset,
        limits_note: limits_note(&device),
        copy_gb_per_s: device.ceilings.copy_gb_per_s,
        device: device.ctx.info().name.clone(),
        files,
    };
    let outs: Vec<&Path> = summary.files.iter().map(PathBuf::as_path).collect();
    kit::emit(&summary, &outs);
    if failed_checks > 0 {
        bail!("{failed_checks} of {} points failed their check against the CPU reference", summary.points);
    }
    Ok(())
}

fn reps(cli: &Cli) -> Reps {
    Reps { repeats: cli.repeats, warm_up: std::time::Duration::from_millis(cli.warm_up_ms) }
}

fn limits_note(device: &Device) -> String {
    format!(
        "{} limits, chosen by vendor id {:#x}: Vulkan reports no per-multiprocessor limits",
        device.limits.preset,
        device.ctx.info().vendor_id
    )
}

/// The values of each of `entry`'s parameters this run uses: those given, else every
/// accepted value (`all`, for tuning) or the default.
fn chosen_values(entry: &Entry, cli: &Cli, all: bool) -> Result<Vec<Vec<u32>>> {
    let params = entry.kernel.params();
    let mut given: Vec<(String, Vec<u32>)> = cli.params.clone();
    if !cli.workgroups.is_empty() {
        given.push(("workgroup".into(), cli.workgroups.clone()));
    }
    for (key, values) in &given {
        let Some(p) = params.iter().find(|p| p.key == key) else {
            let keys: Vec<&str> = params.iter().map(|p| p.key).collect();
            bail!(
                "{} has no parameter {key:?} (it has: {})",
                entry.name,
                if keys.is_empty() { "none".into() } else { keys.join(", ") }
            );
        };
        if let Some(v) = values.iter().find(|v| !p.values.contains(v)) {
            bail!("{}: {key}={v} is not one of the accepted values {:?}", entry.name, p.values);
        }
    }
    Ok(params
        .iter()
        .map(|p| match given.iter().rev().find(|(k, _)| k == p.key) {
            Some((_, v)) => v.clone(),
            None if all => p.values.clone(),
            None => vec![p.default],
        })
        .collect())
}

fn chosen_sizes(entry: &Entry, cli: &Cli) -> Result<Vec<u64>> {
    let accepted = entry.kernel.sizes();
    let sizes = if cli.sizes.is_empty() { accepted.default.to_vec() } else { cli.sizes.clone() };
    for &s in &sizes {
        if s > accepted.max {
            bail!("--sizes {s}: {} takes at most {} {}", entry.name, accepted.max, accepted.unit);
        }
    }
    if let Some(&largest) = sizes.iter().max() {
        kit::budget::check(
            entry.kernel.footprint(largest),
            format!("sweep {} at {largest} {}", entry.name, accepted.unit),
        )?;
    }
    Ok(sizes)
}

/// The files a sweep of `entry` writes into `out`.
fn output_files(entry: &Entry, out: &Path) -> Vec<PathBuf> {
    let name = entry.name;
    let mut files = vec![out.join(format!("{name}.csv")), out.join(format!("{name}.jsonl"))];
    let keys: Vec<&str> = entry.kernel.params().iter().map(|p| p.key).collect();
    if keys.is_empty() {
        files.push(out.join(format!("{name}.size.png")));
    }
    files.extend(keys.iter().map(|k| out.join(format!("{name}.{k}.png"))));
    if entry.kernel.has_shader() {
        files.push(out.join(format!("{name}.fig9.png")));
    }
    files
}

/// Runs `entry` over the grid and sizes, printing each point as it is measured.
fn sweep(
    device: &mut Device,
    entry: &Entry,
    values: &[Vec<u32>],
    sizes: &[u64],
    reps: Reps,
) -> Result<(Vec<Point>, Vec<Skipped>)> {
    let keys: Vec<&'static str> = entry.kernel.params().iter().map(|p| p.key).collect();
    let configs = measure::grid(&keys, values);
    let bar = kit::progress::bar((configs.len() * sizes.len()) as u64, &format!("sweep {}", entry.name));
    let mut points = Vec::new();
    let mut skipped = Vec::new();
    for config in &configs {
        for &size in sizes {
            bar.inc(1);
            match measure::point(device, entry, config, size, reps) {
                Ok(p) => {
                    bar.suspend(|| kit::emit(&p, &[]));
                    points.push(p);
                }
                // A shape or a size this device cannot run (a workgroup or shared memory past
                // its limits, a buffer past its binding range or its memory) is skipped, not
                // fatal: the sweep shows what the device can do.
                Err(e) if device_limit(&e) => {
                    skipped.push(Skipped { params: config.clone(), size, reason: e.to_string() })
                }
                Err(e) => {
                    return Err(anyhow::Error::new(e))
                        .with_context(|| format!("{} {} at {size}", entry.name, config.label()))
                }
            }
        }
    }
    bar.finish_and_clear();
    Ok((points, skipped))
}

/// Whether `e` says the device cannot run a point (rather than that the point failed).
fn device_limit(e: &engine::EngineError) -> bool {
    use engine::ErrorKind;
    matches!(e.kind(), ErrorKind::Unsupported | ErrorKind::BindingRange | ErrorKind::OutOfMemory)
}

/// The sizes at which at least one configuration ran, and each other size with why it did not
/// run (the first configuration's reason).
fn runnable_sizes(sizes: &[u64], points: &[Point], skipped: &[Skipped]) -> (Vec<u64>, Vec<SkippedSize>) {
    let (ran, not): (Vec<u64>, Vec<u64>) = sizes.iter().partition(|&&s| points.iter().any(|p| p.size == s));
    let reasons = not
        .into_iter()
        .map(|size| {
            let reason = skipped.iter().find(|k| k.size == size).map(|k| k.reason.clone()).unwrap_or_default();
            SkippedSize { size, reason }
        })
        .collect();
    (ran, reasons)
}

/// Writes the CSV, the JSON lines and the plots, all or none.
fn write_outputs(device: &Device, entry: &Entry, points: &[Point], files: &[PathBuf]) -> Result<()> {
    let title = format!("{} on {}", entry.name, device.ctx.info().name);
    let mut staged = kit::output::Staged::new();
    staged.write(&files[0], |w| w.write_all(output::csv(points).as_bytes()))?;
    staged.write(&files[1], |w| w.write_all(output::json_lines(points).as_bytes()))?;
    for file in &files[2..] {
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let what = stem.rsplit('.').next().unwrap_or_default();
        staged.write(file, |w| match what {
            "size" => plot::write_panels(&[plot::size_panel(points, &title)], w),
            "fig9" => {
                let best = points.iter().filter(|p| p.check_passed).min_by(|a, b| a.median_ms.total_cmp(&b.median_ms));
                let shape = best.or(points.first()).and_then(|p| p.shape.clone());
                let shape = shape.ok_or_else(|| anyhow!("no shader shape for {}", entry.name))?;
                let max_threads = args::workgroup_limit(device.ctx.info());
                plot::write_panels(&plot::fig9_panels(&device.limits, &shape, max_threads, &title), w)
            }
            key => plot::write_panels(&plot::parameter_panels(points, key, &title), w),
        })?;
    }
    staged.commit()?;
    Ok(())
}

/// One kernel's tuning result.
#[derive(Serialize)]
struct Tuned {
    kernel: &'static str,
    params: BTreeMap<String, u32>,
    defaults: BTreeMap<String, u32>,
    sizes: Vec<u64>,
    tuned_ms: Vec<f64>,
    default_ms: Vec<f64>,
    /// Default time over tuned time, summed over the sizes.
    speedup: f64,
    /// Sizes asked for that no configuration could run on this device, with why.
    skipped_sizes: Vec<SkippedSize>,
    tuning_file: PathBuf,
}

/// A tuning size the device cannot run (a buffer past its binding range or its memory).
#[derive(Serialize)]
struct SkippedSize {
    size: u64,
    reason: String,
}

impl std::fmt::Display for Tuned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tuned {}: {:?} (defaults {:?}), {:.2}x at sizes {:?}; written to {}",
            self.kernel,
            self.params,
            self.defaults,
            self.speedup,
            self.sizes,
            self.tuning_file.display()
        )?;
        for s in &self.skipped_sizes {
            write!(f, "\n  size {} skipped (no configuration runs it here): {}", s.size, s.reason)?;
        }
        Ok(())
    }
}

fn as_map(config: &Config) -> BTreeMap<String, u32> {
    config.0.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// `--tune`: sweeps each kernel's whole grid at its sizes and keeps the configuration whose
/// summed median time is least among those that ran and passed their check at every size the
/// device can run. A size no configuration runs (past the device's binding range or memory)
/// is left out of the tuning and named in the result.
fn tune(cli: &Cli) -> Result<()> {
    let path = match &cli.tuning_file {
        Some(p) => p.clone(),
        None => tuning::path()
            .ok_or_else(|| anyhow!("no tuning file location: set TESSERA_TUNING, XDG_CONFIG_HOME or HOME"))?,
    };
    kit::output::check_file(&path, &["json"], &[])?;
    let mut file = tuning::read(&path)?;
    let entries: Vec<&Entry> = match &cli.kernel {
        Some(name) => vec![registry::by_name(name).ok_or_else(|| anyhow!("unknown kernel {name:?}"))?],
        None => registry::ALL.iter().filter(|e| !e.kernel.params().is_empty()).collect(),
    };
    let mut device = Device::new(cli.run.context()?)?;
    let (name, driver) = (device.ctx.info().name.clone(), device.ctx.info().driver_version);
    let mut results = Vec::new();
    for entry in entries {
        let values = chosen_values(entry, cli, true)?;
        let sizes = chosen_sizes(entry, cli)?;
        let (points, skipped) = sweep(&mut device, entry, &values, &sizes, reps(cli))?;
        let (sizes, skipped_sizes) = runnable_sizes(&sizes, &points, &skipped);
        if sizes.is_empty() {
            let reasons: Vec<String> = skipped_sizes.iter().map(|s| format!("{}: {}", s.size, s.reason)).collect();
            bail!("{}: no size runs on {} ({})", entry.name, device.ctx.info().name, reasons.join("; "));
        }
        let defaults = Config(entry.kernel.params().iter().map(|p| (p.key, p.default)).collect());
        let times = |config: &Config| -> Option<Vec<f64>> {
            let pts: Vec<&Point> = points.iter().filter(|p| &p.params == config && p.check_passed).collect();
            (pts.len() == sizes.len()).then(|| pts.iter().map(|p| p.median_ms).collect())
        };
        let keys: Vec<&'static str> = entry.kernel.params().iter().map(|p| p.key).collect();
        let best = measure::grid(&keys, &values)
            .into_iter()
            .filter_map(|c| times(&c).map(|t| (c, t)))
            .min_by(|a, b| a.1.iter().sum::<f64>().total_cmp(&b.1.iter().sum::<f64>()));
        let Some((config, tuned_ms)) = best else {
            bail!("{}: no configuration ran and passed its check at every size", entry.name);
        };
        let default_ms = times(&defaults).unwrap_or_default();
        let speedup = if default_ms.is_empty() {
            f64::NAN
        } else {
            default_ms.iter().sum::<f64>() / tuned_ms.iter().sum::<f64>()
        };
        let tuned = tuning::KernelTuning {
            params: as_map(&config),
            sizes: sizes.clone(),
            tuned_ms: tuned_ms.clone(),
            default_ms: default_ms.clone(),
        };
        file.set(&name, driver, entry.name, tuned);
        results.push(Tuned {
            kernel: entry.name,
            params: as_map(&config),
            defaults: as_map(&defaults),
            sizes,
            tuned_ms,
            default_ms,
            speedup,
            skipped_sizes,
            tuning_file: path.clone(),
        });
    }
    kit::output::write_json(&path, &file)?;
    for r in &results {
        kit::emit(r, &[&path]);
    }
    Ok(())
}
