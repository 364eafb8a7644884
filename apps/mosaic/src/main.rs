//! `mosaic`: photomosaics without repeated tiles (see `mosaic --help`).

mod commands;

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

use commands::args::{BenchCmd, BuildArgs, DemoArgs, DistanceArgs, IndexArgs, SolveArgs};

#[derive(Subcommand)]
enum Command {
    /// Solve the assignment for a distance matrix D.npy (rows = patches, columns = tiles)
    #[command(
        after_help = "Examples:\n  mosaic solve --distance D.npy --method softassign\n  mosaic solve --distance D.npy --method exact --json\n  mosaic solve --distance D.npy --method exact --repeat 4\n  mosaic solve --distance D.npy --method exact --min-distance 2 --grid 40x30"
    )]
    Solve(SolveArgs),
    /// Distance matrix (Eq. 1) between the patches of a target and the tiles of a folder
    #[command(after_help = "Examples:\n  mosaic distance --target photo.jpg --tiles tiles/ --grid 30x20 --out D.npy")]
    Distance(DistanceArgs),
    /// Build a mosaic image: index tiles, distances, solve, render
    #[command(
        after_help = "Examples:\n  mosaic build --target photo.jpg --tiles tiles/ --grid 30x20 --method softassign --out mosaic.png\n  mosaic build --target photo.jpg --tiles tiles/ --grid 16x12 --method exact --backend cpu --out mosaic.jpg --quality 90\n  mosaic build --target photo.jpg --tiles tiles/ --grid 80x60 --repeat 4 --tint 0.3 --method greedy --tile-px 100 --out poster.tif --assignment poster.csv\n  mosaic build --target photo.jpg --tiles tiles/ --grid 40x40 --min-distance 3 --method exact --out spaced.png\n  mosaic build --target photo.jpg --tiles tiles/ --layout adaptive --min-cell 8 --max-cell 64 --repeat 8 --metric ciede2000 --method exact --out adaptive.png"
    )]
    Build(BuildArgs),
    /// Index a tile folder (recursively) into its cache file
    #[command(
        after_help = "Examples:\n  mosaic index tiles/\n  mosaic index tiles/ --cells 4x4 --aspect 1.5 --cache /tmp/mosaic-cache --json"
    )]
    Index(IndexArgs),
    /// Benchmarks on synthetic data (GPU and CPU reference), one line per measurement
    #[command(
        after_help = "Examples:\n  mosaic bench --quick\n  mosaic bench --device 0\n  mosaic bench --size 2048x8192 --skip-cpu --json\n  mosaic bench --costs matrices/ --size 4096x4096 --json"
    )]
    Bench(BenchCmd),
    /// A photomosaic of a sample photo from tiles cut from the others: exact, greedy and (on a GPU) SoftAssign; PNGs and JSON
    #[command(after_help = "Examples:\n  mosaic demo --out demo/\n  mosaic demo --out demo/ --backend cpu --json")]
    Demo(DemoArgs),
}

fn main() -> ExitCode {
    let app = clap::Command::new("mosaic")
        .about("Photomosaics without repeated tiles: greedy, annealing, SoftAssign on the GPU, exact");
    kit::main_subcommands::<_, mosaic::MosaicError>(app, env!("CARGO_PKG_VERSION"), run)
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Solve(args) => commands::solve::run(args),
        Command::Distance(args) => commands::distance::run(args),
        Command::Build(args) => commands::build::run(args),
        Command::Index(args) => commands::index::run(args),
        Command::Bench(args) => commands::bench::run(args),
        Command::Demo(args) => commands::demo::run(args),
    }
}
