//! `lightfield`: train a dictionary ensemble, encode light fields on the GPU (or the CPU
//! reference), decode them, inspect `.lfc` files, generate synthetic light fields, and run
//! the benchmark and the demo.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use clap::{Parser, Subcommand};
use engine::cli::{print_json, Backend as CliBackend, CommonArgs};
use lightfield::bitstream::{Compressed, Header};
use lightfield::codec::{decode_lightfield, encode_lightfield, Backend};
use lightfield::dictionary::Ensemble;
use lightfield::encoder::Params;
use lightfield::gpu::GpuCodec;
use lightfield::lightfield::{parse_pair, psnr, LightField};
use lightfield::patch::PatchShape;
use lightfield::train::{train, TrainDevice, TrainOptions};
use serde_json::json;

#[derive(Parser)]
#[command(name = "lightfield", about = "Dictionary-ensemble light-field codec (train, encode on the GPU, decode)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Train an ensemble of K dictionaries from light fields (.npy or folders of views)
    Train {
        #[arg(long, num_args = 1.., required = true)]
        input: Vec<PathBuf>,
        /// Number of dictionaries K
        #[arg(long)]
        dictionaries: usize,
        /// Patch size HxWxUxV (pixels, then views)
        #[arg(long, default_value = "5x5x8x8")]
        patch: String,
        #[arg(long)]
        out: PathBuf,
        /// View grid UxV for inputs that are folders of images
        #[arg(long)]
        grid: Option<String>,
        /// Assignment/update iterations
        #[arg(long, default_value_t = 5)]
        iterations: usize,
        /// Error threshold the assignment encodes at
        #[arg(long, default_value_t = 5e-3)]
        epsilon: f32,
        /// Sparsity the assignment encodes at (default: patch samples / 8)
        #[arg(long)]
        sparsity: Option<usize>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Train on a random subset of at most this many patches
        #[arg(long, default_value_t = 50_000)]
        max_patches: usize,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Encode a light field
    Encode {
        #[arg(long)]
        input: PathBuf,
        #[arg(long)]
        dict: PathBuf,
        /// Most coefficients per patch (T)
        #[arg(long)]
        sparsity: usize,
        /// Largest RMSE per patch, values in [0, 1]
        #[arg(long)]
        epsilon: f32,
        #[arg(long)]
        out: PathBuf,
        /// View grid UxV when the input is a folder of images
        #[arg(long)]
        grid: Option<String>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Decode a .lfc file to a float32 .npy of shape (U, V, H, W, 3)
    Decode {
        input: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Print a .lfc file's header and statistics
    Info {
        input: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Write a synthetic light field (textured planes at several depths) as float32 .npy
    Generate {
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value = "8x8")]
        views: String,
        /// Width x height of each view
        #[arg(long, default_value = "128x128")]
        size: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Benchmarks (paper's Table 1 setting, rate-distortion vs JPEG); JSON lines
    Bench {
        #[command(flatten)]
        common: engine::cli::BenchArgs,
        /// Only training and the Table 1 encode/decode (no rate-distortion set)
        #[arg(long)]
        encode_only: bool,
    },
    /// Generate, train, encode and decode a small light field into DIR
    Demo {
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        device: Option<String>,
    },
}

fn grid(text: &Option<String>) -> Result<Option<(usize, usize)>> {
    Ok(text.as_deref().map(parse_pair).transpose()?)
}

fn read_input(path: &Path, grid_text: &Option<String>) -> Result<LightField> {
    Ok(LightField::read(path, grid(grid_text)?)?)
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lightfield: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Train {
            input,
            dictionaries,
            patch,
            out,
            grid: grid_text,
            iterations,
            epsilon,
            sparsity,
            seed,
            max_patches,
            common,
        } => {
            let shape = PatchShape::parse(&patch)?;
            let inputs: Vec<&Path> = input.iter().map(PathBuf::as_path).collect();
            engine::io::check_not_input(&out, &inputs)?;
            let lfs = input.iter().map(|p| read_input(p, &grid_text)).collect::<Result<Vec<_>>>()?;
            let params = Params { sparsity: sparsity.unwrap_or(shape.len() / 8).max(1), epsilon };
            let opts = TrainOptions { k: dictionaries, shape, iterations, params, seed, max_patches };
            let ctx = match common.backend {
                CliBackend::Gpu => Some(engine::Context::open(common.device.as_deref())?),
                CliBackend::Cpu => None,
            };
            let device = ctx.as_ref().map_or(TrainDevice::Cpu, TrainDevice::Gpu);
            let t0 = Instant::now();
            let json = common.json;
            let ens = train(&lfs, &opts, device, |st| {
                if json {
                    print_json(&json!({"iteration": st.iteration, "mean_coefficients": st.mean_coefficients,
                        "success_fraction": st.success_fraction, "psnr_db": st.psnr_db}));
                } else {
                    eprintln!(
                        "iteration {}: {:.1} coefficients per patch, {:.1}% within epsilon, PSNR {:.2} dB",
                        st.iteration,
                        st.mean_coefficients,
                        100.0 * st.success_fraction,
                        st.psnr_db
                    );
                }
            })?;
            ens.write(&out)?;
            let seconds = t0.elapsed().as_secs_f64();
            if json {
                print_json(&json!({"dictionaries": ens.k, "patch": shape.to_string(), "out": out, "seconds": seconds}));
            } else {
                println!("trained {} dictionaries for {shape} patches in {seconds:.2} s -> {}", ens.k, out.display());
            }
        }
        Command::Encode { input, dict, sparsity, epsilon, out, grid: grid_text, common } => {
            engine::io::check_not_input(&out, &[&input, &dict])?;
            let lf = read_input(&input, &grid_text)?;
            let ens = Ensemble::read(&dict)?;
            let params = Params { sparsity, epsilon };
            params.check(ens.shape.len())?;
            let gpu = match common.backend {
                CliBackend::Gpu => Some(GpuCodec::new(&engine::Context::open(common.device.as_deref())?, &ens)?),
                CliBackend::Cpu => None,
            };
            let backend = gpu.as_ref().map_or(Backend::Cpu, Backend::Gpu);
            let t0 = Instant::now();
            let (compressed, _) = encode_lightfield(&lf, &ens, params, backend)?;
            let bytes = compressed.to_bytes()?;
            let seconds = t0.elapsed().as_secs_f64();
            engine::io::write_atomic(&out, |w| {
                use std::io::Write;
                w.write_all(&bytes).map_err(|e| engine::EngineError::InvalidInput(e.to_string()))
            })?;
            let (decoded, _) = decode_lightfield(&compressed, backend)?;
            let n = compressed.codes.len();
            let mean = compressed.codes.locations.len() as f64 / n as f64;
            let bps = bytes.len() as f64 * 8.0 / lf.samples() as f64;
            let quality = psnr(&lf.data, &decoded.data);
            if common.json {
                print_json(&json!({"patches": n, "mean_coefficients": mean, "bits_per_sample": bps,
                    "psnr_db": quality, "seconds": seconds}));
            } else {
                println!(
                    "{n} patches, {mean:.1} coefficients per patch, {bps:.4} bits/sample, PSNR {quality:.2} dB, {seconds:.3} s -> {}",
                    out.display()
                );
            }
        }
        Command::Decode { input, out, common } => {
            engine::io::check_not_input(&out, &[&input])?;
            let compressed = Compressed::read(&input)?;
            let gpu = match common.backend {
                CliBackend::Gpu => {
                    Some(GpuCodec::new(&engine::Context::open(common.device.as_deref())?, &compressed.ensemble)?)
                }
                CliBackend::Cpu => None,
            };
            let t0 = Instant::now();
            let (lf, _) = decode_lightfield(&compressed, gpu.as_ref().map_or(Backend::Cpu, Backend::Gpu))?;
            let seconds = t0.elapsed().as_secs_f64();
            lf.write_npy(&out)?;
            if common.json {
                print_json(&json!({"shape": lf.shape(), "seconds": seconds}));
            } else {
                println!("decoded {:?} in {seconds:.3} s -> {}", lf.shape(), out.display());
            }
        }
        Command::Info { input, json } => info(&input, json)?,
        Command::Generate { out, views, size, seed } => {
            let (views, size) = (parse_pair(&views)?, parse_pair(&size)?);
            if views.0 * views.1 * size.0 * size.1 > 1 << 30 {
                bail!("light field of {}x{} views of {}x{} is too large to generate", views.0, views.1, size.0, size.1);
            }
            let lf = lightfield::synth::generate(views, size, seed);
            lf.write_npy(&out)?;
            println!("wrote {:?} float32 light field -> {}", lf.shape(), out.display());
        }
        Command::Bench { common, encode_only } => {
            lightfield::bench::run(common.quick, encode_only, common.device.as_deref(), |v| print_json(&v))?
        }
        Command::Demo { out, device } => println!("{}", lightfield::demo::run(&out, device.as_deref())?),
    }
    Ok(())
}

fn info(path: &Path, json: bool) -> Result<()> {
    let bytes = std::fs::read(path).with_context(|| format!("{}", path.display()))?;
    let header = Header::parse(&bytes).with_context(|| format!("{}", path.display()))?;
    let c = Compressed::from_bytes(&bytes).with_context(|| format!("{}", path.display()))?;
    let n = c.codes.len();
    let samples: usize = c.size.iter().product::<usize>() * 3;
    let mut usage = vec![0usize; c.ensemble.k];
    c.codes.membership.iter().for_each(|&m| usage[m as usize] += 1);
    let at_cap = (0..n).filter(|&p| c.codes.count(p) == c.params.sparsity).count();
    let summary = json!({
        "file": path, "bytes": bytes.len(), "version": lightfield::bitstream::LFC_VERSION,
        "views": [c.size[0], c.size[1]], "height": c.size[2], "width": c.size[3],
        "patch": c.ensemble.shape.to_string(), "dictionaries": c.ensemble.k,
        "sparsity": c.params.sparsity, "epsilon": c.params.epsilon, "step": c.step,
        "patches": n, "coefficients": header.coefficients,
        "mean_coefficients": header.coefficients as f64 / n as f64, "patches_at_sparsity": at_cap,
        "dictionaries_used": usage.iter().filter(|&&u| u > 0).count(),
        "bits_per_sample": bytes.len() as f64 * 8.0 / samples as f64,
        "payload_bytes": header.payload_len, "compressed_payload_bytes": header.frame_len,
    });
    if json {
        print_json(&summary);
    } else {
        for (k, v) in summary.as_object().expect("object") {
            println!("{k:>24}: {v}");
        }
    }
    Ok(())
}
