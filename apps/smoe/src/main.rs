//! `smoe`: fit, render, convert and view Steered Mixture-of-Experts models; `bench` and
//! `demo` for the benchmark run and the main-job demo. The subcommands' flags and handlers
//! are in [`commands`], one file each; the edges (errors, outputs checked before work, the
//! JSON envelope, progress) are `kit`'s (docs/cli.md).

mod bench;
mod commands;
mod viewer;

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
enum Command {
    /// Render a view of a model to an image (8-bit RGB) or .npy (float32, H x W x 3)
    #[command(
        after_help = "Examples:\n  smoe render photo.json --out photo.png\n  smoe render photo.json --out big.png --scale 2\n  smoe render lf.smoe --out view.npy --view 1.5,2 --backend cpu\n  smoe render lf.smc --views views/"
    )]
    Render(commands::render::RenderArgs),
    /// Fit a model to an image or a light field (.npy, shape U x V x H x W x 3): EM, then gradient descent on the rendered error
    #[command(
        after_help = "Examples:\n  smoe fit photo.png --kernels 2000 --out photo.json\n  smoe fit lf.npy --kernels 500 --iterations 20 --out lf.smoe --backend cpu\n  smoe fit photo.png --kernels 9000 --refine-steps 0 --out em-only.smoe\n  smoe fit photo.png --psnr 32 --out q32.smoe\n  smoe fit photo.png --bpp 0.5 --out photo.smc"
    )]
    Fit(commands::fit::FitArgs),
    /// Open a window and render the model every frame; the mouse moves the view of a light field
    #[command(
        after_help = "Examples:\n  smoe view photo.json\n  smoe view photo.json --frames 60 --screenshot shot.png"
    )]
    View(commands::view::ViewArgs),
    /// Convert between the JSON, binary (.smoe/.bin) and compact (.smc) model formats (format from the extension)
    #[command(
        after_help = "Examples:\n  smoe convert photo.json photo.smoe\n  smoe convert photo.smoe photo.json\n  smoe convert photo.smoe photo.smc --quality 80\n  smoe convert photo.smoe photo.smc --bpp 0.5"
    )]
    Convert(commands::convert::ConvertArgs),
    /// Benchmarks: the paper's Table 4 and fitting (one JSON object per line)
    #[command(after_help = "Examples:\n  smoe bench --quick\n  smoe bench --set render --device 0")]
    Bench(commands::bench::BenchArgs),
    /// Fit a sample photo (EM and refinement), render it at 1x and 2x, write everything to DIR
    #[command(after_help = "Examples:\n  smoe demo --out demo/")]
    Demo(commands::demo::DemoArgs),
}

fn main() -> std::process::ExitCode {
    let app = clap::Command::new("smoe")
        .about("Steered Mixture-of-Experts: fit, render, convert and view models")
        .after_help("Examples:\n  smoe fit photo.png --kernels 2000 --out photo.json\n  smoe render photo.json --out big.png --size 3840x2160\n  smoe convert photo.json photo.smoe");
    kit::main_subcommands::<_, smoe::error::SmoeError>(app, env!("CARGO_PKG_VERSION"), run)
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Render(args) => commands::render::run(args),
        Command::Fit(args) => commands::fit::run(args),
        Command::View(args) => commands::view::run(args),
        Command::Convert(args) => commands::convert::run(args),
        Command::Bench(args) => commands::bench::run(args),
        Command::Demo(args) => commands::demo::run(args),
    }
}

#[cfg(test)]
mod tests {
    use clap::Subcommand;

    /// clap's own checks of every subcommand's flags (unique ids and groups, valid
    /// references between flags), which it otherwise makes only when that subcommand runs.
    #[test]
    fn every_subcommand_is_well_formed() {
        super::Command::augment_subcommands(clap::Command::new("app")).debug_assert();
    }
}
