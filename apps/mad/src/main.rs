//! `mad`: the Most Apparent Distortion image quality metric on the command line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};
use engine::cli::{print_json, Backend, CommonArgs};
use mad::gpu::GpuMad;
use mad::input::load_pair;
use mad::{GrayImage, Maps, Scores};
use rayon::prelude::*;
use serde_json::json;

#[derive(Parser)]
#[command(
    name = "mad",
    version,
    about = "The Most Apparent Distortion image quality metric (Larson & Chandler 2010), exact, on the GPU"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Score one pair: reference and distorted image (PNG, JPEG, TIFF, BMP; 8/16-bit; gray or RGB)
    Score {
        reference: PathBuf,
        distorted: PathBuf,
        /// Write the detection, appearance and combined maps (PNG with a colour scale, and .npy) here
        #[arg(long)]
        maps: Option<PathBuf>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Score every `ref,dist` line of a CSV (paths relative to the CSV's folder)
    Batch {
        #[arg(long)]
        pairs: PathBuf,
        /// Pairs per GPU chunk (default: about 64 MiB of spectra per chunk). With `--device all`
        /// or `--device 0,1`, the pairs are split across those GPUs
        #[arg(long)]
        chunk: Option<usize>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// The benchmark set (512x512 latency, 1000-pair throughput, 1920x1080), JSON lines
    Bench(engine::cli::BenchArgs),
    /// Generate a sample scene and distortions, score them, write images, maps and a JSON summary
    Demo {
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        common: CommonArgs,
    },
}

fn open_gpu(common: &CommonArgs) -> Result<Option<GpuMad>> {
    match common.backend {
        Backend::Cpu => Ok(None),
        Backend::Gpu => {
            let ctx = engine::Context::open(common.device.as_deref())?;
            Ok(Some(GpuMad::new(&ctx)?))
        }
    }
}

fn score_fields(s: &Scores, width: usize, height: usize) -> serde_json::Map<String, serde_json::Value> {
    let v = json!({
        "mad": s.mad, "detection": s.detection, "appearance": s.appearance, "alpha": s.alpha,
        "width": width, "height": height,
    });
    v.as_object().cloned().unwrap_or_default()
}

fn score_one(gpu: Option<&GpuMad>, r: &GrayImage, d: &GrayImage, want_maps: bool) -> Result<(Scores, Option<Maps>)> {
    Ok(match gpu {
        Some(gpu) => gpu.score(r, d, want_maps)?,
        None => {
            let (s, m) = mad::cpu::score(r, d)?;
            (s, want_maps.then_some(m))
        }
    })
}

fn score(reference: &Path, distorted: &Path, maps_dir: Option<&Path>, common: &CommonArgs) -> Result<()> {
    let (r, d) = load_pair(reference, distorted)?;
    let gpu = open_gpu(common)?;
    let (s, maps) = score_one(gpu.as_ref(), &r, &d, maps_dir.is_some())?;
    if let (Some(dir), Some(maps)) = (maps_dir, &maps) {
        mad::maps::write_maps(dir, maps, &[reference, distorted])?;
    }
    if common.json {
        print_json(&score_fields(&s, r.width, r.height).into());
    } else {
        println!(
            "MAD {:.4} (detection {:.4}, appearance {:.4}, alpha {:.4}) {}x{}",
            s.mad, s.detection, s.appearance, s.alpha, r.width, r.height
        );
    }
    Ok(())
}

/// Prints batch lines in CSV order as they become ready.
struct Ordered {
    json: bool,
    next: usize,
    ready: BTreeMap<usize, serde_json::Value>,
    failed: usize,
    /// Pairs never reported (their worker failed).
    skipped: usize,
}

impl Ordered {
    fn put(&mut self, index: usize, line: serde_json::Value) {
        if line.get("error").is_some() {
            self.failed += 1;
        }
        self.ready.insert(index, line);
        self.print_ready();
    }

    /// Prints what is left after a worker failed, skipping the pairs it never reported.
    fn flush_gaps(&mut self) {
        while let Some((&index, _)) = self.ready.first_key_value() {
            self.skipped += index - self.next;
            self.next = index;
            self.print_ready();
        }
    }

    fn print_ready(&mut self) {
        while let Some(line) = self.ready.remove(&self.next) {
            if self.json {
                print_json(&line);
            } else if let Some(e) = line.get("error") {
                println!(
                    "{} {}: error: {}",
                    line["ref"].as_str().unwrap_or(""),
                    line["dist"].as_str().unwrap_or(""),
                    e.as_str().unwrap_or("")
                );
            } else {
                println!(
                    "{} {}: MAD {:.4}",
                    line["ref"].as_str().unwrap_or(""),
                    line["dist"].as_str().unwrap_or(""),
                    line["mad"].as_f64().unwrap_or(f64::NAN)
                );
            }
            self.next += 1;
        }
    }
}

/// The devices `--device` names for a batch: one selector as usual, or `all` / a comma list
/// to split the batch across several GPUs (each takes the next group of pairs when ready).
fn batch_devices(selector: Option<&str>) -> Result<Vec<engine::Context>> {
    match selector {
        Some("all") => Ok(engine::Context::open_all()?),
        Some(list) if list.contains(',') => {
            let instance = engine::Instance::new(&[])?;
            list.split(',')
                .map(|d| {
                    let options = engine::ContextOptions { selector: Some(d.trim()), swapchain: false };
                    Ok(engine::Context::open_with(instance.clone(), options)?)
                })
                .collect()
        }
        one => Ok(vec![engine::Context::open(one)?]),
    }
}

fn batch(csv: &Path, chunk: Option<usize>, common: &CommonArgs) -> Result<bool> {
    let pairs = mad::pairs::read(csv)?;
    let devices = match common.backend {
        Backend::Gpu => batch_devices(common.device.as_deref())?,
        Backend::Cpu => Vec::new(),
    };
    let named = |i: usize, mut fields: serde_json::Map<String, serde_json::Value>| {
        fields.insert("ref".into(), pairs[i].ref_name.clone().into());
        fields.insert("dist".into(), pairs[i].dist_name.clone().into());
        serde_json::Value::Object(fields)
    };
    let error = |i: usize, e: &dyn std::fmt::Display| {
        named(i, json!({ "error": e.to_string() }).as_object().cloned().unwrap_or_default())
    };
    // Workers (one per device, or one for the CPU) claim groups of pairs from a shared
    // counter and decode each group in parallel, lazily, so decoding overlaps GPU work.
    let group = rayon::current_num_threads().max(4) * 2;
    let next = AtomicUsize::new(0);
    let claims = |tx: mpsc::Sender<(usize, serde_json::Value)>| {
        std::iter::from_fn(|| {
            let start = next.fetch_add(group, Ordering::Relaxed);
            (start < pairs.len()).then(|| start..(start + group).min(pairs.len()))
        })
        .flat_map(|range| {
            let decoded: Vec<_> =
                range.into_par_iter().map(|i| (i, load_pair(&pairs[i].reference, &pairs[i].distorted))).collect();
            decoded
        })
        .filter_map(move |(i, loaded)| match loaded {
            Ok((r, d)) => Some((i, r, d)),
            Err(e) => {
                let _ = tx.send((i, error(i, &e)));
                None
            }
        })
    };
    let mut out = Ordered { json: common.json, next: 0, ready: BTreeMap::new(), failed: 0, skipped: 0 };
    let bar = engine::cli::progress(pairs.len() as u64, "mad batch", common.json);
    let worker_errors: Vec<anyhow::Error> = std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<(usize, serde_json::Value)>();
        let mut workers = Vec::new();
        if devices.is_empty() {
            let (tx, claims) = (tx.clone(), &claims);
            workers.push(scope.spawn(move || -> Result<()> {
                for (i, r, d) in claims(tx.clone()) {
                    let line = match mad::cpu::score(&r, &d) {
                        Ok((s, _)) => named(i, score_fields(&s, r.width, r.height)),
                        Err(e) => error(i, &e),
                    };
                    let _ = tx.send((i, line));
                }
                Ok(())
            }));
        }
        for ctx in &devices {
            let (tx, claims) = (tx.clone(), &claims);
            workers.push(scope.spawn(move || -> Result<()> {
                let gpu = GpuMad::new(ctx)?;
                gpu.score_stream(claims(tx.clone()), chunk, false, |s| {
                    let _ = tx.send((s.tag, named(s.tag, score_fields(&s.scores, s.width, s.height))));
                })?;
                Ok(())
            }));
        }
        drop(tx);
        for (i, line) in rx {
            out.put(i, line);
            bar.inc(1);
        }
        workers
            .into_iter()
            .filter_map(|w| w.join().unwrap_or_else(|_| Err(anyhow::anyhow!("worker panicked"))).err())
            .collect()
    });
    bar.finish_and_clear();
    out.flush_gaps();
    for e in &worker_errors {
        eprintln!("mad batch: error: {e:#}");
    }
    let missing = pairs.len() - out.next.min(pairs.len()) + out.skipped;
    if out.failed > 0 || missing > 0 {
        eprintln!("mad batch: {} of {} pairs failed", out.failed + missing, pairs.len());
    }
    Ok(out.failed == 0 && missing == 0 && worker_errors.is_empty())
}

fn run(cli: Cli) -> Result<bool> {
    match cli.command {
        Command::Score { reference, distorted, maps, common } => {
            score(&reference, &distorted, maps.as_deref(), &common).map(|_| true)
        }
        Command::Batch { pairs, chunk, common } => batch(&pairs, chunk, &common),
        Command::Bench(engine::cli::BenchArgs { quick, device }) => {
            let ctx = engine::Context::open(device.as_deref())?;
            mad::bench::run(&ctx, quick)?;
            Ok(true)
        }
        Command::Demo { out, common } => {
            let gpu = open_gpu(&common)?;
            let summary = mad::demo::run(&out, gpu.as_ref()).with_context(|| format!("demo into {}", out.display()))?;
            if common.json {
                print_json(&summary.json);
            } else {
                println!("{}", summary.line);
            }
            Ok(true)
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("mad: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
