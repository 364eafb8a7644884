//! `composite`: Active Pixel encoding, decoding and compositing of partial images, the
//! distributed renderer (under `mpirun` or as one rank), the demo and the benchmark.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use clap::{Parser, Subcommand};
use compositor::ap::{ApImage, Encoded};
use compositor::comm::{Comm, Mpi, Single};
use compositor::distributed::{self, Readback, RenderRequest};
use compositor::frame::Frame;
use compositor::gpu_blend::GpuBlender;
use compositor::gpu_encode::GpuEncoder;
use compositor::ops::{self, Op};
use compositor::schedule::Strategy;
use engine::cli::{print_json, Backend, CommonArgs};
use engine::io::check_not_input;
use serde_json::json;

#[derive(Parser)]
#[command(name = "composite", about = "Sort-last compositing with GPU Active Pixel encoding, over MPI")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Encode a colour PNG + depth .npy into an Active Pixel (.ap) file
    Encode {
        #[arg(long)]
        color: PathBuf,
        #[arg(long)]
        depth: PathBuf,
        #[arg(long)]
        out: PathBuf,
        /// Background RGBA stored in the header, e.g. 0,0,0,0
        #[arg(long, default_value = "0,0,0,0")]
        background: String,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Decode a .ap file into a colour PNG (and depth .npy)
    Decode {
        input: PathBuf,
        #[arg(long)]
        color: PathBuf,
        #[arg(long)]
        depth: Option<PathBuf>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Composite .ap files (first = front / lowest rank) into a PNG
    Blend {
        #[arg(required = true, num_args = 1..)]
        inputs: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        depth_out: Option<PathBuf>,
        #[arg(long, value_enum, default_value_t = Op::ZBuffer)]
        op: Op,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Render a scene split across the MPI ranks and composite it (one rank without mpirun)
    ///
    /// --backend gpu (default): ROI and Active Pixel encoding on the GPU, only the payload is
    /// copied; --backend cpu: raw readback, CPU encoding; --no-compress: raw exchange.
    Render {
        /// A folder of .obj files, or points:N[:seed]
        #[arg(long)]
        scene: String,
        /// WxH, e.g. 1920x1080
        #[arg(long)]
        size: String,
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 1)]
        frames: u32,
        #[arg(long, value_enum, default_value_t = Strategy::BinarySwap)]
        strategy: Strategy,
        /// Exchange raw pixels instead of Active Pixel encoded ones
        #[arg(long)]
        no_compress: bool,
        /// Also write each rank's last partial image to DIR as rank{r}.rgba (RGBA8) and
        /// rank{r}.depth (f32), e.g. to run another compositor on the same images
        #[arg(long)]
        partials: Option<PathBuf>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Render, encode, composite and write a small generated scene to DIR
    Demo {
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// The paper's Tables 1 and 2 on the GPU (one JSON object per line)
    Bench(engine::cli::BenchArgs),
    /// Every shape of the GPU encoder on rendered 4K and 8K frames: times, copy-bandwidth
    /// floors, registers, payloads checked (one JSON object per line)
    Sweep(engine::cli::BenchArgs),
}

fn parse_background(s: &str) -> Result<[u8; 4]> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.len() != 4 {
        bail!("--background {s:?}: expected R,G,B,A with four values 0-255");
    }
    let mut out = [0u8; 4];
    for (o, p) in out.iter_mut().zip(parts) {
        *o = p.trim().parse().with_context(|| format!("--background {s:?}: {p:?} is not 0-255"))?;
    }
    Ok(out)
}

fn parse_size(s: &str) -> Result<(u32, u32)> {
    let (w, h) = s.split_once(['x', 'X']).with_context(|| format!("--size {s:?}: expected WxH"))?;
    let (w, h): (u32, u32) = (w.parse().context("--size width")?, h.parse().context("--size height")?);
    if w == 0 || h == 0 || w > 16384 || h > 16384 {
        bail!("--size {s}: width and height must be 1-16384");
    }
    Ok((w, h))
}

fn encode(color: &Path, depth: &Path, out: &Path, background: &str, common: &CommonArgs) -> Result<()> {
    let background = parse_background(background)?;
    check_not_input(out, &[color, depth])?;
    let frame = Frame::load(color, depth)?;
    let encoded = match common.backend {
        Backend::Cpu => compositor::codec::encode_parallel(&frame),
        Backend::Gpu => {
            let ctx = engine::Context::open(common.device.as_deref())?;
            let c = ctx.upload(&frame.color, "colour")?;
            let d = ctx.upload(&frame.depth, "depth")?;
            GpuEncoder::new(&ctx)?.encode(&c, &d, frame.width, frame.height)?.0
        }
    };
    let image = ApImage::new(frame.width, frame.height, background, encoded)?;
    image.write(out)?;
    let summary = json!({"command": "encode", "out": out, "width": frame.width, "height": frame.height,
        "bytes": image.to_bytes().len(), "raw_bytes": 8 * frame.pixels(), "active_pixels": image.encoded.active_pixels(),
        "backend": common.backend});
    report(common.json, &summary, || {
        format!("wrote {} ({} bytes, {} active pixels)", out.display(), summary["bytes"], summary["active_pixels"])
    });
    Ok(())
}

fn report(json: bool, value: &serde_json::Value, text: impl FnOnce() -> String) {
    if json {
        print_json(value);
    } else {
        println!("{}", text());
    }
}

fn blend(inputs: &[PathBuf], out: &Path, depth_out: Option<&Path>, op: Op, common: &CommonArgs) -> Result<()> {
    let refs: Vec<&Path> = inputs.iter().map(|p| p.as_path()).collect();
    check_not_input(out, &refs)?;
    if let Some(d) = depth_out {
        check_not_input(d, &refs)?;
    }
    let images: Vec<ApImage> = inputs.iter().map(|p| ApImage::read(p)).collect::<Result<_, _>>()?;
    let first = &images[0];
    for (img, path) in images.iter().zip(inputs) {
        if (img.width, img.height) != (first.width, first.height) {
            bail!(
                "image sizes differ: {} is {}x{}, {} is {}x{}",
                inputs[0].display(),
                first.width,
                first.height,
                path.display(),
                img.width,
                img.height
            );
        }
    }
    let encoded: Vec<&Encoded> = images.iter().map(|i| &i.encoded).collect();
    let result = match common.backend {
        Backend::Cpu => ops::composite(&encoded, op)?,
        Backend::Gpu => GpuBlender::new(&engine::Context::open(common.device.as_deref())?)?.composite(&encoded, op)?,
    };
    let frame = compositor::codec::decode(&result, first.width, first.height);
    frame.save(out, depth_out, first.background)?;
    let summary = json!({"command": "blend", "inputs": inputs.len(), "op": op, "out": out,
        "active_pixels": result.active_pixels(), "backend": common.backend});
    report(common.json, &summary, || format!("wrote {} ({} inputs, {:?})", out.display(), inputs.len(), op));
    Ok(())
}

fn render(req: RenderRequest, out: &Path, json: bool) -> Result<()> {
    let comm: Box<dyn Comm> = if Mpi::launched() { Box::new(Mpi::init()?) } else { Box::new(Single) };
    let result = distributed::render(comm.as_ref(), &req, |line| {
        if json {
            print_json(&line);
        } else {
            println!(
                "frame {}: {} ranks, render {:.2} ms, roi {:.2} ms, encode {:.2} ms, d2h {:.2} ms, wait {:.2} ms, exchange {:.2} ms, composite {:.2} ms, {} bytes sent",
                line["frame"], line["ranks"], line["render_ms"].as_f64().unwrap_or(0.0), line["roi_ms"].as_f64().unwrap_or(0.0),
                line["encode_ms"].as_f64().unwrap_or(0.0), line["d2h_ms"].as_f64().unwrap_or(0.0),
                line["wait_ms"].as_f64().unwrap_or(0.0), line["exchange_ms"].as_f64().unwrap_or(0.0), line["composite_ms"].as_f64().unwrap_or(0.0), line["bytes_sent"]
            );
        }
    });
    let frame = match result {
        Ok(frame) => frame,
        Err(e) if comm.size() > 1 => {
            eprintln!("Error: rank {}: {e}", comm.rank());
            comm.abort(1)
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(frame) = frame {
        frame.save(out, None, [0, 0, 0, 0])?;
        if !json {
            println!("wrote {}", out.display());
        }
    }
    Ok(())
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    // Frames allocate and free tens of MB of host buffers each (engine::heap says why).
    engine::heap::keep_large_allocations();
    match cli.command {
        Command::Encode { color, depth, out, background, common } => encode(&color, &depth, &out, &background, &common),
        Command::Decode { input, color, depth, common } => {
            check_not_input(&color, &[&input])?;
            if let Some(d) = &depth {
                check_not_input(d, &[&input, &color])?;
            }
            let image = ApImage::read(&input)?;
            let frame = compositor::codec::decode(&image.encoded, image.width, image.height);
            frame.save(&color, depth.as_deref(), image.background)?;
            let summary = json!({"command": "decode", "width": image.width, "height": image.height, "color": color});
            report(common.json, &summary, || format!("wrote {} ({}x{})", color.display(), image.width, image.height));
            Ok(())
        }
        Command::Blend { inputs, out, depth_out, op, common } => {
            blend(&inputs, &out, depth_out.as_deref(), op, &common)
        }
        Command::Render { scene, size, out, frames, strategy, no_compress, partials, common } => {
            let (width, height) = parse_size(&size)?;
            if frames == 0 {
                bail!("--frames must be at least 1");
            }
            // Rasterisation is always on the GPU; the backend picks where encoding runs.
            let readback = match (no_compress, common.backend) {
                (true, _) => Readback::Raw,
                (false, Backend::Gpu) => Readback::GpuAp,
                (false, Backend::Cpu) => Readback::CpuAp,
            };
            let req =
                RenderRequest { scene, width, height, frames, strategy, readback, device: common.device, partials };
            render(req, &out, common.json)
        }
        Command::Demo { out, common } => {
            let summary = compositor::demo::run(&out, common.device.as_deref())?;
            if common.json {
                print_json(&summary);
            } else {
                println!("{}", summary["summary"].as_str().unwrap_or_default());
            }
            Ok(())
        }
        Command::Bench(engine::cli::BenchArgs { quick, device }) => {
            compositor::bench::run(device.as_deref(), quick, |v| print_json(&v))?;
            Ok(())
        }
        Command::Sweep(engine::cli::BenchArgs { quick, device }) => {
            compositor::sweep::run(device.as_deref(), quick, |v| print_json(&v))?;
            Ok(())
        }
    }
}
