//! `composite`: Active Pixel encoding, decoding and compositing of partial images, the
//! distributed renderer (under `mpirun` or as one rank), the demo and the benchmark. The
//! subcommands' arguments and handlers are in [`commands`], one file each.

use anyhow::Result;
use clap::Subcommand;

mod commands;
mod records;

use commands::{bench, blend, decode, demo, encode, merge, render};

#[derive(Subcommand)]
enum Command {
    /// Encode a colour image + float32 depth .npy into an Active Pixel (.ap) file
    #[command(after_help = "Examples:\n  \
        composite encode --color rank0.png --depth rank0.npy --out rank0.ap\n  \
        composite encode --color rank1.png --depth rank1.npy --out rank1.ap --backend cpu --background 0,0,0,255")]
    Encode(encode::EncodeArgs),
    /// Decode a .ap file into a colour image (and a depth .npy)
    #[command(after_help = "Examples:\n  \
        composite decode rank0.ap --color rank0.png\n  \
        composite decode rank0.ap --color rank0.tif --depth rank0_depth.npy --json")]
    Decode(decode::DecodeArgs),
    /// Composite .ap files (first = front / lowest rank) into an image
    #[command(after_help = "Examples:\n  \
        composite blend rank0.ap rank1.ap rank2.ap --out frame.png\n  \
        composite blend front.ap back.ap --op over --out frame.webp --depth-out depth.npy --backend cpu")]
    Blend(blend::BlendArgs),
    /// Render a scene split across the MPI ranks and composite it (one rank without mpirun)
    ///
    /// --backend gpu (default): ROI and Active Pixel encoding on the GPU, only the payload is
    /// copied; --backend cpu: raw readback, CPU encoding; --no-compress: raw exchange.
    #[command(after_help = "Examples:\n  \
        composite render --scene points:1000000 --size 1920x1080 --out frame.png\n  \
        mpirun -n 4 composite render --scene points:4000000:7 --size 3840x2160 --strategy radix-k --frames 10 --out frame.png --json\n  \
        composite render --scene meshes/ --size 1280x720 --out mesh.jpg --partials partials/")]
    Render(render::RenderArgs),
    /// Composite every rank's partial image from a folder over MPI (one rank without mpirun)
    ///
    /// Rank r reads DIR/rank{r}.rgba + DIR/rank{r}.depth (the --partials layout of render:
    /// RGBA8 and little-endian f32 per pixel, which needs --size), or DIR/rank{r}.png +
    /// DIR/rank{r}.npy (colour and depth as encode reads them); rank 0 writes the image, the
    /// same as `composite blend` of those images encoded in rank order.
    #[command(after_help = "Examples:\n  \
        mpirun -n 4 composite merge --inputs partials/ --size 1920x1080 --out frame.png\n  \
        mpirun -n 3 composite merge --inputs layers/ --op over --strategy radix-k --out frame.png --json")]
    Merge(merge::MergeArgs),
    /// Render, encode, composite and write a small generated scene to a folder
    #[command(after_help = "Examples:\n  composite demo --out demo/\n  composite demo --out demo/ --device 1 --json")]
    Demo(demo::DemoArgs),
    /// The paper's Tables 1 and 2 on the GPU (one JSON object per line)
    #[command(after_help = "Examples:\n  composite bench --quick\n  composite bench --device h200")]
    Bench(kit::BenchArgs),
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Encode(args) => encode::run(args),
        Command::Decode(args) => decode::run(args),
        Command::Blend(args) => blend::run(args),
        Command::Render(args) => render::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Bench(args) => bench::run(args),
    }
}

fn main() -> std::process::ExitCode {
    let app = clap::Command::new("composite").about("Sort-last compositing with GPU Active Pixel encoding, over MPI");
    kit::main_subcommands::<_, composite::CompositeError>(app, env!("CARGO_PKG_VERSION"), run)
}
