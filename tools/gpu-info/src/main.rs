//! `gpu-info`: every Vulkan device as JSON, with its limits, subgroup properties, features,
//! memory heaps, and the two measured ceilings every benchmark is compared with.

use anyhow::Result;
use clap::Parser;
use serde_json::json;

#[derive(Parser)]
#[command(about = "Print every Vulkan device, its limits and measured ceilings as JSON")]
struct Args {
    /// Only describe devices; do not run the bandwidth and FMA probes
    #[arg(long)]
    no_measure: bool,
    /// Measure only this device (index or name substring)
    #[arg(long)]
    device: Option<String>,
    /// Size of the copy-bandwidth probe's source buffer in MiB
    #[arg(long, default_value_t = 1024)]
    copy_mib: u64,
    /// FMA rounds per invocation in the throughput probe
    #[arg(long, default_value_t = 4096)]
    fma_iterations: u32,
    /// One line of JSON instead of pretty-printed
    #[arg(long)]
    json: bool,
    /// Also print a one-line human summary on stderr
    #[arg(long)]
    summary: bool,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let mut devices = Vec::new();
    for info in engine::context::describe_all()? {
        let wanted = match &args.device {
            Some(sel) => sel
                .parse::<usize>()
                .map(|i| i == info.index)
                .unwrap_or_else(|_| info.name.to_lowercase().contains(&sel.to_lowercase())),
            None => true,
        };
        let mut entry = serde_json::to_value(&info)?;
        let mut line = format!(
            "{}: subgroup {}, {} KiB shared",
            info.name,
            info.subgroup_size,
            info.max_shared_memory_bytes / 1024
        );
        if wanted && !args.no_measure {
            let ctx = engine::Context::open(Some(&info.index.to_string()))?;
            let ceilings = engine::ceilings::measure(&ctx, args.copy_mib << 20, args.fma_iterations)?;
            line += &format!(", copy {:.1} GB/s, FMA {:.2} TFLOP/s", ceilings.copy_gb_per_s, ceilings.fma_tflop_per_s);
            entry["ceilings"] = serde_json::to_value(ceilings)?;
        }
        if args.summary {
            eprintln!("gpu-info: {line}");
        }
        devices.push(entry);
    }
    let out = json!({ "devices": devices });
    if args.json {
        println!("{}", serde_json::to_string(&out)?);
    } else {
        println!("{}", serde_json::to_string_pretty(&out)?);
    }
    Ok(())
}
