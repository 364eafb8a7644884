//! `mad`: the Most Apparent Distortion image quality metric on the command line. The
//! subcommands' flags and handlers are in [`commands`], one file each.

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;

mod commands;

use commands::{batch, bench, correlate, demo, score};

#[derive(Subcommand)]
enum Command {
    /// Score one pair: a reference image and a distorted version of it
    #[command(after_help = "Examples:\n  \
        mad score ref.png dist.jpg\n  \
        mad score ref.png dist.png --maps maps/ --json\n  \
        mad score ref.tif dist.tif --backend cpu\n  \
        mad score ref.png dist.png --split-stages --device 0,1\n  \
        mad score big_ref.png big_dist.png --max-memory 2G\n  \
        mad score big_ref.png big_dist.png --backend cpu --max-memory 2G\n\n\
        A pair whose whole-image scoring would go over --max-memory (on the GPU backend: host and\n\
        device memory together, and never over the device's) is scored in tiles of whole blocks\n\
        with a wrapped-around halo, as large as the budget allows: a bar shows the tiles; --maps\n\
        assembles the maps from them. The tiles' filters are the whole image's, so the scores agree\n\
        with whole-image scoring within about 1e-5 on the GPU (a 768-pixel halo; windows of sides\n\
        2^a 3^b 5^c, both stages in one) and 3e-5 on the CPU (a 512-pixel halo). --split-stages\n\
        refuses such a pair.")]
    Score(score::ScoreArgs),
    /// Score many pairs: the lines of a CSV, or an IQA data set's folders paired by name
    #[command(after_help = "Examples:\n  \
        mad batch --pairs pairs.csv\n  \
        mad batch --pairs pairs.csv --json --device all\n  \
        mad batch --ref-dir csiq/src_imgs --dist-dir csiq/dst_imgs --out csiq.csv\n  \
        mad batch --ref-dir refs --dist-dir dist --pattern 'dist_{ref}_*' --out scores.jsonl --backend cpu\n\n\
        Folders pair by name as CSIQ (1600.AWGN.1.png against 1600.png), TID2013 (i01_01_1.bmp\n\
        against I01.BMP) and KADID-10k (I01_01_01.png against I01.png) name them: a distorted\n\
        image belongs to the reference whose name is its longest prefix followed by . _ or -.\n\
        With --out, rows are appended as pairs finish; running the same command again resumes.\n\
        A pair that cannot be scored gets a line with its error; the batch goes on and exits 1.")]
    Batch(batch::BatchArgs),
    /// How well scores agree with people: SROCC, KROCC, and PLCC and RMSE after the usual
    /// 4-parameter logistic mapping
    #[command(after_help = "Examples:\n  \
        mad correlate --scores csiq.csv --subjective csiq_dmos.csv\n  \
        mad correlate --scores kadid.jsonl --subjective kadid/dmos.csv --column dmos --json\n\n\
        The subjective file is a CSV with a header: a name column (dist, dist_img, image, name\n\
        or file) and a score column (--column, default the first of mos, dmos, score). Rows\n\
        match the results file's `dist` entries, or their file names.")]
    Correlate(correlate::CorrelateArgs),
    /// The benchmark set (512x512 latency, 1000-pair throughput, 1920x1080, an 8000x8000 pair in tiles under 2 GiB), one JSON line each
    #[command(after_help = "Examples:\n  mad bench\n  mad bench --quick --device 0")]
    Bench(kit::BenchArgs),
    /// Score eight distortions of a sample photo (two strengths each), write images, maps and a JSON summary
    #[command(after_help = "Examples:\n  mad demo --out demo/\n  mad demo --out demo/ --backend cpu --json")]
    Demo(demo::DemoArgs),
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Score(args) => score::run(args),
        Command::Batch(args) => batch::run(args),
        Command::Correlate(args) => correlate::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Demo(args) => demo::run(args),
    }
}

fn main() -> ExitCode {
    let app = clap::Command::new("mad")
        .about("The Most Apparent Distortion image quality metric (Larson & Chandler 2010), exact, on the GPU");
    kit::main_subcommands::<_, mad::MadError>(app, env!("CARGO_PKG_VERSION"), run)
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
