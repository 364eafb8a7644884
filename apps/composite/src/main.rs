//! `composite`: Active Pixel encoding, decoding and compositing of partial images, the
//! distributed renderer (under `mpirun` or as one rank), the demo and the benchmark.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use composite::ap::{ApImage, Encoded};
use composite::comm::{Comm, Mpi, Single};
use composite::cpu;
use composite::distributed::{self, FrameStats, Readback, RenderRequest};
use composite::frame::Frame;
use composite::gpu::blend::GpuBlender;
use composite::gpu::encode::GpuEncoder;
use composite::scene::SceneSpec;
use composite::schedule::Strategy;
use composite::types::Op;
use composite::CompositeError;
use kit::image::IMAGE_EXTENSIONS;
use kit::{Backend, CommonArgs};

mod merge;
mod records;

use records::{BlendReport, DecodeReport, EncodeReport, Rendered};

#[derive(Subcommand)]
enum Command {
    /// Encode a colour image + float32 depth .npy into an Active Pixel (.ap) file
    #[command(after_help = "Examples:\n  \
        composite encode --color rank0.png --depth rank0.npy --out rank0.ap\n  \
        composite encode --color rank1.png --depth rank1.npy --out rank1.ap --backend cpu --background 0,0,0,255")]
    Encode(EncodeArgs),
    /// Decode a .ap file into a colour image (and a depth .npy)
    #[command(after_help = "Examples:\n  \
        composite decode rank0.ap --color rank0.png\n  \
        composite decode rank0.ap --color rank0.tif --depth rank0_depth.npy --json")]
    Decode(DecodeArgs),
    /// Composite .ap files (first = front / lowest rank) into an image
    #[command(after_help = "Examples:\n  \
        composite blend rank0.ap rank1.ap rank2.ap --out frame.png\n  \
        composite blend front.ap back.ap --op over --out frame.webp --depth-out depth.npy --backend cpu")]
    Blend(BlendArgs),
    /// Render a scene split across the MPI ranks and composite it (one rank without mpirun)
    ///
    /// --backend gpu (default): ROI and Active Pixel encoding on the GPU, only the payload is
    /// copied; --backend cpu: raw readback, CPU encoding; --no-compress: raw exchange.
    #[command(after_help = "Examples:\n  \
        composite render --scene points:1000000 --size 1920x1080 --out frame.png\n  \
        mpirun -n 4 composite render --scene points:4000000:7 --size 3840x2160 --strategy radix-k --frames 10 --out frame.png --json\n  \
        composite render --scene meshes/ --size 1280x720 --out mesh.jpg --partials partials/")]
    Render(RenderArgs),
    /// Composite every rank's partial image from a folder over MPI (one rank without mpirun)
    ///
    /// Rank r reads DIR/rank{r}.rgba + DIR/rank{r}.depth (the --partials layout of render:
    /// RGBA8 and little-endian f32 per pixel, which needs --size), or DIR/rank{r}.png +
    /// DIR/rank{r}.npy (colour and depth as encode reads them); rank 0 writes the image, the
    /// same as `composite blend` of those images encoded in rank order.
    #[command(after_help = "Examples:\n  \
        mpirun -n 4 composite merge --inputs partials/ --size 1920x1080 --out frame.png\n  \
        mpirun -n 3 composite merge --inputs layers/ --op over --strategy radix-k --out frame.png --json")]
    Merge(MergeArgs),
    /// Render, encode, composite and write a small generated scene to a folder
    #[command(after_help = "Examples:\n  composite demo --out demo/\n  composite demo --out demo/ --device 1 --json")]
    Demo(DemoArgs),
    /// The paper's Tables 1 and 2 on the GPU (one JSON object per line)
    #[command(after_help = "Examples:\n  composite bench --quick\n  composite bench --device h200")]
    Bench(kit::BenchArgs),
    /// Every shape of the GPU encoder on rendered 4K and 8K frames: times, copy-bandwidth
    /// floors, registers, payloads checked (one JSON object per line)
    #[command(after_help = "Examples:\n  composite sweep --quick\n  composite sweep --device 0")]
    Sweep(kit::BenchArgs),
}

#[derive(Args)]
struct EncodeArgs {
    /// Colour image (PNG, JPEG, TIFF, WebP or BMP, read by content; RGBA, alpha kept)
    #[arg(long)]
    color: PathBuf,
    /// Depth as a float32 or float64 .npy of shape (height, width); 1.0 marks background pixels
    #[arg(long)]
    depth: PathBuf,
    /// The .ap file to write
    #[arg(long)]
    out: PathBuf,
    /// Background RGBA stored in the header: four values 0-255
    #[arg(long, default_value = "0,0,0,0", value_name = "R,G,B,A", value_parser = parse_background)]
    background: [u8; 4],
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args)]
struct DecodeArgs {
    /// The .ap file to decode
    input: PathBuf,
    /// Colour image to write (.png, .jpg, .tif, .bmp or .webp); background where inactive
    #[arg(long)]
    color: PathBuf,
    /// Also write the depth as a float32 .npy
    #[arg(long)]
    depth: Option<PathBuf>,
    #[command(flatten)]
    host: HostArgs,
}

/// The shared flags of a command that runs on the CPU only (no --backend, no --device).
#[derive(Args)]
struct HostArgs {
    /// Print one JSON object per line (docs/cli.md) instead of text
    #[arg(long)]
    json: bool,
    /// Memory budget for reading inputs, such as 512M or 8G (default: half of physical memory)
    #[arg(long, value_name = "SIZE", value_parser = kit::budget::parse_size)]
    max_memory: Option<u64>,
}

#[derive(Args)]
struct BlendArgs {
    /// .ap files of equal size, front (lowest rank) first
    #[arg(required = true, num_args = 1..)]
    inputs: Vec<PathBuf>,
    /// Colour image to write (.png, .jpg, .tif, .bmp or .webp)
    #[arg(long)]
    out: PathBuf,
    /// Also write the composited depth as a float32 .npy
    #[arg(long)]
    depth_out: Option<PathBuf>,
    /// zbuffer: nearest depth wins (ties to the earlier input); over: premultiplied alpha, front to back
    #[arg(long, value_enum, default_value_t = Op::ZBuffer)]
    op: Op,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args)]
struct RenderArgs {
    /// A folder of .obj files, or points:N[:seed] (a generated cloud of N points)
    #[arg(long, value_name = "DIR|points:N[:seed]")]
    scene: SceneSpec,
    /// Image size WxH, each side 1-16384
    #[arg(long, value_name = "WxH", value_parser = kit::cli::parse_size)]
    size: (u32, u32),
    /// Image to write on rank 0 (.png, .jpg, .tif, .bmp or .webp): the last frame
    #[arg(long)]
    out: PathBuf,
    /// Frames to render (the camera circles the scene by 2 degrees a frame)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    frames: u32,
    /// How the ranks exchange spans
    #[arg(long, value_enum, default_value_t = Strategy::BinarySwap)]
    strategy: Strategy,
    /// Exchange raw pixels instead of Active Pixel encoded ones
    #[arg(long)]
    no_compress: bool,
    /// Also write each rank's last partial image to DIR as rank{r}.rgba (RGBA8) and
    /// rank{r}.depth (f32), e.g. to run another compositor on the same images
    #[arg(long, value_name = "DIR")]
    partials: Option<PathBuf>,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args)]
pub(crate) struct MergeArgs {
    /// Folder of rank{r}.rgba + rank{r}.depth (with --size) or rank{r}.png + rank{r}.npy
    #[arg(long, value_name = "DIR")]
    inputs: PathBuf,
    /// Image to write on rank 0 (.png, .jpg, .tif, .bmp or .webp)
    #[arg(long)]
    out: PathBuf,
    /// Size WxH of raw .rgba/.depth partials (each side 1-16384)
    #[arg(long, value_name = "WxH", value_parser = kit::cli::parse_size)]
    size: Option<(u32, u32)>,
    /// zbuffer: nearest depth wins (ties to the lower rank); over: premultiplied alpha, rank 0 in front
    #[arg(long, value_enum, default_value_t = Op::ZBuffer)]
    op: Op,
    /// How the ranks exchange spans (default: by rank count and image size)
    #[arg(long, value_enum)]
    strategy: Option<Strategy>,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args)]
struct DemoArgs {
    /// Folder to write the demo's images, .ap files and summary.json into (created if missing)
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    run: kit::cli::RunArgs,
}

/// `R,G,B,A` with four values 0-255 (clap value parser).
fn parse_background(text: &str) -> Result<[u8; 4], String> {
    let parts: Vec<&str> = text.split(',').collect();
    let bad = || format!("{text:?}: expected R,G,B,A with four values 0-255");
    let [r, g, b, a] = parts[..] else { return Err(bad()) };
    let value = |p: &str| p.trim().parse::<u8>().map_err(|_| bad());
    Ok([value(r)?, value(g)?, value(b)?, value(a)?])
}

/// The engine context of `--backend gpu`, `None` for cpu.
fn context(common: &CommonArgs) -> Result<Option<engine::Context>> {
    Ok(common.context()?)
}

fn encode(args: EncodeArgs) -> Result<()> {
    let EncodeArgs { color, depth, out, background, common } = args;
    kit::output::check_file(&out, &["ap"], &[&color, &depth])?;
    let frame = Frame::load(&color, &depth)?;
    let encoded = match context(&common)? {
        None => cpu::encode::encode_parallel(&frame),
        Some(ctx) => {
            let c = ctx.upload(&frame.color, "colour")?;
            let d = ctx.upload(&frame.depth, "depth")?;
            GpuEncoder::new(&ctx)?.encode(&c, &d, frame.width, frame.height)?.0
        }
    };
    let image = ApImage::new(frame.width, frame.height, background, encoded)?;
    image.write(&out)?;
    let report = EncodeReport {
        out: out.clone(),
        width: frame.width,
        height: frame.height,
        bytes: image.to_bytes().len(),
        raw_bytes: 8 * frame.pixels(),
        active_pixels: image.encoded.active_pixels(),
    };
    kit::emit(&report, &[&out]);
    Ok(())
}

fn decode(args: DecodeArgs) -> Result<()> {
    // kit::main applies --json and --max-memory.
    let DecodeArgs { input, color, depth, host: _ } = args;
    kit::output::check_file(&color, IMAGE_EXTENSIONS, &[&input])?;
    if let Some(d) = &depth {
        kit::output::check_file(d, &["npy"], &[&input, &color])?;
    }
    let image = ApImage::read(&input)?;
    let frame = Frame::decode(&image.encoded, image.width, image.height);
    frame.save(&color, depth.as_deref(), image.background)?;
    let report = DecodeReport {
        out: color.clone(),
        width: image.width,
        height: image.height,
        active_pixels: image.encoded.active_pixels(),
    };
    let mut outs: Vec<&Path> = vec![&color];
    outs.extend(depth.as_deref());
    kit::emit(&report, &outs);
    Ok(())
}

fn blend(args: BlendArgs) -> Result<()> {
    let BlendArgs { inputs, out, depth_out, op, common } = args;
    let refs: Vec<&Path> = inputs.iter().map(|p| p.as_path()).collect();
    kit::output::check_file(&out, IMAGE_EXTENSIONS, &refs)?;
    if let Some(d) = &depth_out {
        let mut all = refs.clone();
        all.push(&out);
        kit::output::check_file(d, &["npy"], &all)?;
    }
    let images: Vec<ApImage> = inputs.iter().map(|p| ApImage::read(p)).collect::<Result<_, _>>()?;
    let first = &images[0];
    for (img, path) in images.iter().zip(&inputs) {
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
    let result = match context(&common)? {
        None => cpu::blend::composite(&encoded, op)?,
        Some(ctx) => GpuBlender::new(&ctx)?.composite(&encoded, op)?,
    };
    let frame = Frame::decode(&result, first.width, first.height);
    frame.save(&out, depth_out.as_deref(), first.background)?;
    let report = BlendReport {
        out: out.clone(),
        inputs: inputs.len(),
        op,
        width: first.width,
        height: first.height,
        active_pixels: result.active_pixels(),
    };
    let mut outs: Vec<&Path> = vec![&out];
    outs.extend(depth_out.as_deref());
    kit::emit(&report, &outs);
    Ok(())
}

/// Ends every rank of the job after an error on this one during the exchange (where the
/// other ranks would wait for it forever), printed as kit prints errors.
fn abort_job(comm: &dyn Comm, error: CompositeError) -> ! {
    let message = distributed::message(&error);
    kit::print_error(&CompositeError::Rank { rank: comm.rank(), message }.into());
    comm.abort(1)
}

/// Ends a job of several ranks that all know one of them failed ([`distributed::agree`]):
/// rank 0 prints the error, the others stay quiet, and no rank leaves before it has printed,
/// so the message is the same on every run (when every rank printed, mpirun's teardown at
/// the first exit decided which messages got out, and their bytes could interleave). Every
/// rank then leaves MPI and fails with the same status.
pub(crate) fn end_failed_job(comm: Box<dyn Comm>, error: anyhow::Error) -> Result<()> {
    if comm.rank() == 0 {
        kit::print_error(&error);
    }
    comm.barrier();
    drop(comm);
    Err(kit::Reported.into())
}

/// The outputs' checks, on every rank before any work: rank 0 writes `--out`, every rank
/// writes into `--partials`. The ranks agree on the outcome, so none waits for one that
/// stopped.
fn check_outputs(comm: &dyn Comm, args: &RenderArgs) -> Result<(), CompositeError> {
    let checks = || -> Result<(), kit::KitError> {
        // The folder first: `--out` naming the same path then fails here as a folder,
        // instead of after the render.
        if let Some(dir) = &args.partials {
            kit::output::check_folder(dir, &[])?;
        }
        if comm.rank() == 0 {
            kit::output::check_file(&args.out, IMAGE_EXTENSIONS, &[])?;
            let (w, h) = args.size;
            kit::image::check_size(&args.out, w.into(), h.into(), kit::image::Layout::Rgba8)?;
        }
        Ok(())
    };
    distributed::agree(comm, checks().map_err(Into::into))
}

fn render(args: RenderArgs) -> Result<()> {
    // Frames allocate and free tens of MB of host buffers each (kit::heap says why).
    kit::heap::keep_large_allocations();
    let comm: Box<dyn Comm> = if Mpi::launched() { Box::new(Mpi::init()?) } else { Box::new(Single) };
    match render_ranks(comm.as_ref(), &args) {
        Err(e) if matches!(e.downcast_ref::<CompositeError>(), Some(CompositeError::Rank { .. })) => {
            end_failed_job(comm, e)
        }
        result => result,
    }
}

/// This rank's part of `composite render`.
fn render_ranks(comm: &dyn Comm, args: &RenderArgs) -> Result<()> {
    check_outputs(comm, args)?;
    // Rasterisation is always on the GPU; the backend picks where encoding runs.
    let readback = match (args.no_compress, args.common.backend) {
        (true, _) => Readback::Raw,
        (false, Backend::Gpu) => Readback::GpuAp,
        (false, Backend::Cpu) => Readback::CpuAp,
    };
    let (width, height) = args.size;
    let req = RenderRequest {
        scene: args.scene.clone(),
        width,
        height,
        frames: args.frames,
        strategy: args.strategy,
        readback,
        device: args.common.device().clone(),
        partials: args.partials.clone(),
    };
    let bar = kit::progress::bar(args.frames as u64, "frames");
    let mut last: Option<FrameStats> = None;
    let result = distributed::render(comm, &req, |stats| {
        // Each frame is reported when the next one is done; the last once its image is written.
        if let Some(previous) = last.replace(stats) {
            kit::emit(&previous, &[]);
        }
        bar.inc(1);
    });
    bar.finish_and_clear();
    let frame = match result {
        Ok(frame) => frame,
        // Every rank has this one.
        Err(e @ CompositeError::Rank { .. }) => return Err(e.into()),
        Err(e) if comm.size() > 1 => abort_job(comm, e),
        Err(e) => return Err(e.into()),
    };
    if let (Some(frame), Some(stats)) = (frame, last) {
        frame.save(&args.out, None, [0, 0, 0, 0])?;
        let mut outs: Vec<&Path> = vec![&args.out];
        outs.extend(args.partials.as_deref());
        kit::emit(&Rendered { stats, out: args.out.clone() }, &outs);
    }
    Ok(())
}

fn demo(args: DemoArgs) -> Result<()> {
    kit::output::check_folder(&args.out, &[])?;
    let ctx = args.run.context()?;
    let report = composite::demo::run(&ctx, &args.out)?;
    kit::emit(&report, &[&args.out]);
    Ok(())
}

/// Prints a benchmark's JSON lines as they come.
fn print_fields(value: serde_json::Value) {
    kit::emit(&kit::report::Fields(value), &[]);
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Encode(args) => encode(args),
        Command::Decode(args) => decode(args),
        Command::Blend(args) => blend(args),
        Command::Render(args) => render(args),
        Command::Merge(args) => merge::run(args),
        Command::Demo(args) => demo(args),
        Command::Bench(args) => Ok(composite::bench::run(&kit::cli::open(&args.device)?, args.quick, print_fields)?),
        Command::Sweep(args) => Ok(composite::sweep::run(&kit::cli::open(&args.device)?, args.quick, print_fields)?),
    }
}

fn main() -> std::process::ExitCode {
    let app = clap::Command::new("composite").about("Sort-last compositing with GPU Active Pixel encoding, over MPI");
    kit::main_subcommands(app, env!("CARGO_PKG_VERSION"), run)
}
