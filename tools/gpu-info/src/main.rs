//! `gpu-info`: every Vulkan device, with its limits, subgroup properties, features, memory
//! heaps, the tuning the apps apply on it (`kit::tuning`), and the two measured ceilings
//! every benchmark is compared with. One line per device: a summary as text, every field
//! under `--json`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Parser;
use engine::ceilings::Ceilings;
use engine::{Context, ContextOptions, DeviceInfo, DeviceSelector, Instance};
use serde::Serialize;

#[derive(Parser)]
#[command(
    name = "gpu-info",
    version,
    about = "Describe every Vulkan device (limits, subgroups, features, heaps) and measure its copy bandwidth and FMA rate",
    after_help = "Examples:\n  gpu-info\n  gpu-info --no-measure --json\n  gpu-info --device 0 --copy-mib 64 --fma-iterations 512"
)]
struct Cli {
    /// Only describe the devices; do not run the copy-bandwidth and FMA probes
    #[arg(long)]
    no_measure: bool,
    /// Devices to describe and measure: an index, a substring of the name, a comma list or
    /// `all` (every GPU) (default: every device)
    #[arg(long, value_name = "N|NAME|LIST|all")]
    device: Option<DeviceSelector>,
    /// Size of the copy-bandwidth probe's source buffer in MiB, 1 to 16384 and within the
    /// device's largest storage buffer (default: 1024, or that largest buffer if smaller)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=16384))]
    copy_mib: Option<u64>,
    /// FMA rounds per invocation in the throughput probe, 1 to 1048576
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    fma_iterations: u32,
    /// Print one JSON object per device (docs/cli.md) instead of a summary line; no progress
    #[arg(long)]
    json: bool,
}

/// One device: everything the driver reports, its tuning and, unless `--no-measure`, its
/// ceilings.
#[derive(Serialize)]
struct DeviceReport {
    #[serde(flatten)]
    info: DeviceInfo,
    tuning: Tuning,
    #[serde(skip_serializing_if = "Option::is_none")]
    ceilings: Option<Ceilings>,
}

/// The tuning file in effect and the parameters it gives this device's kernels (none: the
/// built-in defaults apply).
#[derive(Serialize)]
struct Tuning {
    file: Option<PathBuf>,
    kernels: BTreeMap<String, BTreeMap<String, u32>>,
}

impl Tuning {
    fn of(info: &DeviceInfo) -> Tuning {
        Tuning { file: kit::tuning::in_effect().path.clone(), kernels: kit::tuning::kernels(info) }
    }
}

impl std::fmt::Display for Tuning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.kernels.is_empty() {
            write!(f, "tuning: built-in defaults")?;
        } else {
            let kernels: Vec<String> = self
                .kernels
                .iter()
                .map(|(name, params)| {
                    let values: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    format!("{name} {}", values.join(" "))
                })
                .collect();
            write!(f, "tuning: {}", kernels.join(", "))?;
        }
        match &self.file {
            Some(path) => write!(f, " ({})", path.display()),
            None => write!(f, " (no tuning file location: HOME unset)"),
        }
    }
}

impl std::fmt::Display for DeviceReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = &self.info;
        write!(
            f,
            "{}: {} ({}), subgroup {}, {} KiB shared, workgroup up to {}",
            i.index,
            i.name,
            i.device_type,
            i.subgroup_size,
            i.max_shared_memory_bytes / 1024,
            i.max_workgroup_invocations
        )?;
        if let Some(c) = &self.ceilings {
            write!(f, ", copy {:.1} GB/s, FMA {:.2} TFLOP/s", c.copy_gb_per_s, c.fma_tflop_per_s)?;
        }
        write!(f, "; {}", self.tuning)
    }
}

/// The copy probe's source buffer where the device allows it: large enough that caches do
/// not flatter the figure on any current GPU.
const DEFAULT_COPY_BYTES: u64 = 1 << 30;

fn main() -> std::process::ExitCode {
    kit::main(env!("CARGO_PKG_VERSION"), run)
}

fn run(cli: Cli) -> Result<()> {
    let instance = Instance::new(&[])?;
    let mut picked = match &cli.device {
        // An unknown device is an error that lists the devices there are.
        Some(selector) => instance.select(selector)?,
        None => (0..instance.devices()?.len()).collect(),
    };
    picked.sort_unstable();
    picked.dedup();
    let infos = engine::context::describe_all()?;
    for index in picked {
        let Some(info) = infos.get(index).cloned() else { bail!("device {index} vanished while listing devices") };
        let ceilings = if cli.no_measure { None } else { Some(measure(&instance, &info, &cli)?) };
        kit::report::set_device(&info.name);
        let tuning = Tuning::of(&info);
        kit::emit(&DeviceReport { info, tuning, ceilings }, &[]);
    }
    Ok(())
}

/// Runs the copy-bandwidth and FMA probes on one device, under a spinner.
fn measure(instance: &std::sync::Arc<Instance>, info: &DeviceInfo, cli: &Cli) -> Result<Ceilings> {
    let largest = info.max_storage_buffer_range;
    let copy_bytes = match cli.copy_mib {
        Some(mib) if mib << 20 > largest => {
            bail!("--copy-mib {mib}: {}'s largest storage buffer is {} MiB", info.name, largest >> 20)
        }
        Some(mib) => mib << 20,
        None => DEFAULT_COPY_BYTES.min(largest),
    };
    let ctx = Context::open_with(instance.clone(), ContextOptions { index: Some(info.index), swapchain: false })?;
    // The engine times both probes in one submission, so one spinner covers the two.
    let spinner = kit::progress::spinner(&format!("{}: copy bandwidth and FMA rate", info.name));
    let ceilings = engine::ceilings::measure(&ctx, copy_bytes, cli.fma_iterations);
    spinner.finish_and_clear();
    Ok(ceilings?)
}
