//! `lightfield bench`: the benchmark sets (`lightfield::bench`), one JSON line per
//! measurement.

use lightfield::bench::Set;
use lightfield::Result;

// No group of its own: the flattened `kit::BenchArgs` already takes the name `BenchArgs`.
#[derive(clap::Args)]
#[group(skip)]
pub struct BenchArgs {
    #[command(flatten)]
    bench: kit::BenchArgs,
    /// Only training and the Table 1 encode/decode (no rate-distortion set)
    #[arg(long, conflicts_with = "train_only")]
    encode_only: bool,
    /// Only the training times (3,200 and 32,000 patches, CPU and GPU, with and without --precluster) and the mode products
    #[arg(long, conflicts_with = "viewer")]
    train_only: bool,
    /// Only the viewer's frame rate: 300 frames of its render path into an offscreen buffer at the Table 1 size (no window)
    #[arg(long, conflicts_with = "encode_only")]
    viewer: bool,
}

pub fn run(args: BenchArgs) -> Result<()> {
    let BenchArgs { bench, encode_only, train_only, viewer } = args;
    let set = match (encode_only, train_only, viewer) {
        (_, _, true) => Set::Viewer,
        (_, true, _) => Set::TrainOnly,
        (true, _, _) => Set::EncodeOnly,
        _ => Set::All,
    };
    lightfield::bench::run(bench.quick, set, &bench.device, |v| kit::emit(&kit::report::Fields(v), &[]))
}
