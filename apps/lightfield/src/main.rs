//! `lightfield`: train a dictionary ensemble, encode light fields on the GPU (or the CPU
//! reference), decode them, inspect `.lfc` files, generate synthetic light fields, and run
//! the benchmark and the demo. The command line follows docs/cli.md (through `kit`).

mod commands;
mod records;
mod viewer;

use std::process::ExitCode;

use clap::Subcommand;

#[derive(Subcommand)]
enum Command {
    /// Train an ensemble of K dictionaries from light fields (.npy or folders of views)
    #[command(after_help = "Examples:\n  lightfield generate --out train.npy --views 8x8 --size 128x128\n  \
        lightfield train --input train.npy --dictionaries 16 --out dict.lfd\n  \
        lightfield train --input train.npy --dictionaries 16 --precluster --out dict.lfd\n  \
        lightfield train --input views/ --grid 8x8 --dictionaries 8 --patch 5x5x8x8 --out dict.lfd --backend cpu")]
    Train(commands::train::TrainArgs),
    /// Encode a light field into a .lfc file
    #[command(after_help = "Examples:\n  \
        lightfield encode --input scene.npy --dict dict.lfd --sparsity 300 --epsilon 0.005 --out scene.lfc\n  \
        lightfield encode --input views/ --dict dict.lfd --sparsity 600 --bpp 0.3 --out scene.lfc\n  \
        lightfield encode --input views/ --grid 8x8 --dict dict.lfd --sparsity 300 --epsilon 0.01 --out scene.lfc --backend cpu")]
    Encode(commands::encode::EncodeArgs),
    /// Decode a .lfc file to a float32 .npy of shape (U, V, H, W, 3) and/or one PNG per view
    #[command(
        group = clap::ArgGroup::new("outputs").required(true).multiple(true).args(["out", "views"]),
        after_help = "Examples:\n  lightfield decode scene.lfc --out scene.npy\n  \
            lightfield decode scene.lfc --views views/ --depth 16 --backend cpu\n  \
            lightfield decode scene.lfc --view 4,4 --out centre.png"
    )]
    Decode(commands::decode::DecodeArgs),
    /// Show a compressed light field in a window from any viewpoint (decoded once on the GPU)
    #[command(
        after_help = "Drag with the mouse or press the arrow keys to move between the views, turn the wheel to \
refocus, [ and ] to narrow or widen the aperture, R to reset.\n\nExamples:\n  lightfield view scene.lfc\n  \
lightfield view scene.lfc --aperture 3 --focus 1.5\n  \
lightfield view scene.lfc --frames 10 --screenshot shot.png --view 1.5,2"
    )]
    View(commands::view::ViewArgs),
    /// Render one viewpoint of a compressed light field to an image (what `view` shows)
    #[command(after_help = "Examples:\n  lightfield render scene.lfc --view 3.5,4.25 --out still.png\n  \
lightfield render scene.lfc --view 4,4 --focus -1.2 --aperture 4 --out refocused.png --backend cpu")]
    Render(commands::render::RenderArgs),
    /// Print a .lfc file's header and statistics (the same checks as decode)
    #[command(after_help = "Examples:\n  lightfield info scene.lfc\n  lightfield info scene.lfc --json")]
    Info(commands::info::InfoArgs),
    /// Write a synthetic light field (textured planes at several depths) as float32 .npy
    #[command(after_help = "Examples:\n  lightfield generate --out scene.npy\n  \
        lightfield generate --out small.npy --views 5x3 --size 64x48 --seed 7")]
    Generate(commands::generate::GenerateArgs),
    /// Benchmarks (the paper's Table 1 setting, rate-distortion vs JPEG); JSON lines
    #[command(
        after_help = "Examples:\n  lightfield bench --quick\n  lightfield bench --encode-only --device 0\n  lightfield bench --train-only --json\n  lightfield bench --viewer --json"
    )]
    Bench(commands::bench::BenchArgs),
    /// Render two light fields of photo layers, train on one, encode and decode the other; write the centre view (original, decoded), the decoded corner views, the .lfd, .lfc and a JSON summary into DIR
    #[command(
        after_help = "Examples:\n  lightfield demo --out demo/\n  lightfield demo --out demo/ --device llvmpipe --json"
    )]
    Demo(commands::demo::DemoArgs),
}

fn main() -> ExitCode {
    let app = clap::Command::new("lightfield")
        .about("Dictionary-ensemble light-field codec (train, encode on the GPU, decode)");
    kit::main_subcommands::<_, lightfield::LfError>(app, env!("CARGO_PKG_VERSION"), run)
}

fn run(command: Command) -> anyhow::Result<()> {
    let done = match command {
        Command::View(args) => commands::view::run(args),
        Command::Train(args) => commands::train::run(args),
        Command::Encode(args) => commands::encode::run(args),
        Command::Decode(args) => commands::decode::run(args),
        Command::Render(args) => commands::render::run(args),
        Command::Info(args) => commands::info::run(args),
        Command::Generate(args) => commands::generate::run(args),
        Command::Bench(args) => commands::bench::run(args),
        Command::Demo(args) => commands::demo::run(args),
    };
    Ok(done?)
}
