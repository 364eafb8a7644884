//! `lightfield encode`: a light field into a `.lfc` file, at an RMSE bound per patch or at
//! a most bits per pixel of the file.

use std::path::PathBuf;
use std::time::Instant;

use kit::stats::ms_since;
use lightfield::codec::{capped_patches, decode_lightfield_with, encode_npy_to_bytes, encode_to_bytes};
use lightfield::codes::{Params, MIN_EPSILON};
use lightfield::dictionary::Ensemble;
use lightfield::lightfield::LightField;
use lightfield::patch::PatchGrid;
use lightfield::{LfError, Result};

use super::{codec_path, gpu_codec, parse_epsilon, parse_grid, patch_count};
use crate::records::EncodeReport;

#[derive(clap::Args)]
pub struct EncodeArgs {
    /// Light field to encode: a .npy of shape (U, V, H, W, 3) (uint8, uint16, or float in [0, 1]) or a folder of view images (HCI input_CamNNN, Stanford out_YY_XX_*, ROW_COL names; else with --grid)
    #[arg(long, value_name = "PATH")]
    input: PathBuf,
    /// Dictionary ensemble (.lfd) made by `lightfield train`
    #[arg(long, value_name = "FILE.lfd")]
    dict: PathBuf,
    /// Most coefficients per patch (T), at most the patch's sample count
    #[arg(long, value_name = "T", value_parser = kit::cli::parse_count)]
    sparsity: usize,
    /// Largest RMSE per patch, values in [0, 1] (at least 0.001)
    #[arg(long, value_parser = parse_epsilon, required_unless_present = "bpp", conflicts_with = "bpp")]
    epsilon: Option<f32>,
    /// Instead of --epsilon: the most bits per pixel the file may take (its bits over views x width x height, dictionaries included); the smallest epsilon found that fits is used
    #[arg(long, value_name = "B", value_parser = parse_bpp)]
    bpp: Option<f64>,
    /// Output compressed light field (.lfc)
    #[arg(long, value_name = "FILE.lfc")]
    out: PathBuf,
    /// View grid UxV (rows x columns) of a folder whose names follow no known layout (read in name order)
    #[arg(long, value_name = "UxV", value_parser = parse_grid)]
    grid: Option<(usize, usize)>,
    /// Fail (exit 1, nothing written) when any patch does not reach --epsilon within the sparsity cap
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    common: kit::CommonArgs,
}

fn parse_bpp(text: &str) -> Result<f64, String> {
    let v = kit::cli::parse_finite(text)?;
    if v <= 0.0 || v > 64.0 {
        return Err(format!("{v} is not in (0, 64] bits per pixel"));
    }
    Ok(v)
}

/// What `encode` holds a patch or the file to.
#[derive(Clone, Copy, Debug)]
enum Rate {
    /// The RMSE bound per patch.
    Epsilon(f32),
    /// The most bits per pixel of the file (its bits over views x width x height).
    BitsPerPixel(f64),
}

/// Most trials of the search for the smallest epsilon whose file fits `--bpp`, after the two
/// ends. The file's size is steep in epsilon (on the rendered 9x9 scenes around 0.3 bits per
/// pixel, 3% of epsilon is 15-20% of the size): 7 trials would leave files 6-13% under the
/// target, so the search runs until a fitting file is within [`RATE_SEARCH_CLOSE`] of it.
const RATE_SEARCH_STEPS: usize = 14;

/// The search stops once a fitting file is at least this share of the target.
const RATE_SEARCH_CLOSE: f64 = 0.99;

/// The epsilon `--bpp` searches from.
const RATE_SEARCH_START: f32 = 0.02;

pub fn run(args: EncodeArgs) -> Result<()> {
    let EncodeArgs { input, dict, sparsity, epsilon, bpp, out, grid, strict, common } = args;
    // clap requires one of the two (`required_unless_present`).
    let rate = match (epsilon, bpp) {
        (Some(epsilon), _) => Rate::Epsilon(epsilon),
        (None, bpp) => Rate::BitsPerPixel(bpp.expect("--epsilon or --bpp")),
    };
    let (input, dict, out) = (input.as_path(), dict.as_path(), out.as_path());
    kit::output::check_file(out, &["lfc"], &[input, dict])?;
    let ens = Ensemble::read(dict)?;
    let epsilon = match rate {
        Rate::Epsilon(e) => e,
        Rate::BitsPerPixel(_) => RATE_SEARCH_START,
    };
    let mut params = Params { sparsity, epsilon };
    params.check(ens.shape.len())?;
    let gpu = gpu_codec(&common, &ens, "lightfield.encode")?;
    let t0 = Instant::now();
    // The bitstream is serialised while the chunks are encoded; compression is the tail.
    // A .npy is read in bands beside the encode; a folder of views is read first.
    let (lf, mut encoded) = if input.is_dir() {
        let lf = LightField::read(input, grid)?;
        let bar = kit::progress::bar(patch_count(&ens, &lf) as u64, "encode");
        let encoded = encode_to_bytes(&lf, &ens, params, codec_path(&gpu), |done| bar.set_position(done as u64))?;
        bar.finish_and_clear();
        (lf, encoded)
    } else {
        let npy = lightfield::npy_bands::NpyLightField::open(input)?;
        let [u, v, h, w] = npy.size;
        let bar = kit::progress::bar(PatchGrid::new(ens.shape, u, v, h, w).len() as u64, "read + encode");
        let (lf, encoded, _) =
            encode_npy_to_bytes(npy, &ens, params, codec_path(&gpu), |done| bar.set_position(done as u64))?;
        bar.finish_and_clear();
        (lf, encoded)
    };
    if let Some(w) = PatchGrid::new(ens.shape, lf.u, lf.v, lf.h, lf.w).padding_warning() {
        kit::report::warn(&w);
    }
    let pixels = (lf.u * lf.v * lf.h * lf.w) as f64;
    let mut trials = 1;
    if let Rate::BitsPerPixel(bpp) = rate {
        let fits = |bytes: &[u8]| bytes.len() as f64 * 8.0 <= bpp * pixels;
        let bar = kit::progress::bar(RATE_SEARCH_STEPS as u64 + 2, "rate search");
        let mut trial = |epsilon: f32| {
            trials += 1;
            bar.inc(1);
            encode_to_bytes(&lf, &ens, Params { sparsity, epsilon }, codec_path(&gpu), |_| {})
        };
        // Bisection in log epsilon between an epsilon that fits (hi) and one that does not
        // (lo); the file kept is the best fitting one seen. The file's size falls as epsilon
        // grows, though not strictly, so the search finds a fitting epsilon, not the least.
        let (mut lo, mut hi) = (MIN_EPSILON, params.epsilon);
        if fits(&encoded.1) {
            let finest = trial(MIN_EPSILON)?;
            if fits(&finest.1) {
                (encoded, hi, lo) = (finest, MIN_EPSILON, MIN_EPSILON);
            }
        } else {
            let coarsest = trial(1.0)?;
            if !fits(&coarsest.1) {
                return Err(LfError::RateUnreachable {
                    bpp,
                    coarsest: coarsest.1.len() as f64 * 8.0 / pixels,
                    dictionaries: ensemble_bits(&ens) / pixels,
                });
            }
            (encoded, lo, hi) = (coarsest, params.epsilon, 1.0);
        }
        let close = |bytes: &[u8]| bytes.len() as f64 * 8.0 >= RATE_SEARCH_CLOSE * bpp * pixels;
        for _ in 0..RATE_SEARCH_STEPS {
            if hi / lo < 1.0005 || close(&encoded.1) {
                break;
            }
            let mid = (lo * hi).sqrt();
            let e = trial(mid)?;
            if fits(&e.1) {
                (encoded, hi) = (e, mid);
            } else {
                lo = mid;
            }
        }
        bar.finish_and_clear();
        params.epsilon = hi;
    }
    let (compressed, bytes, times, time) = encoded;
    let n = patch_count(&ens, &lf);
    let encode_ms = ms_since(t0);
    // Decoded as a reader would decode the file, for the quality report; all before
    // writing, so `--strict` leaves nothing behind.
    let bar = kit::progress::bar(n as u64, "check");
    let (decoded, _) = decode_lightfield_with(&compressed, codec_path(&gpu), |done| bar.set_position(done as u64))?;
    bar.finish_and_clear();
    let capped = capped_patches(&compressed, &lf);
    if strict && capped.over_epsilon > 0 {
        return Err(LfError::OverEpsilon {
            over: capped.over_epsilon,
            patches: n,
            epsilon: params.epsilon,
            sparsity: params.sparsity,
            worst: capped.worst_rmse_bound.unwrap_or(0.0),
        });
    }
    kit::output::write_bytes(out, &bytes)?;
    let report = EncodeReport {
        quality: lightfield::codec::EncodeQuality::new(&lf, &compressed, bytes.len(), &decoded),
        bits_per_pixel: bytes.len() as f64 * 8.0 / pixels,
        bpp_target: match rate {
            Rate::BitsPerPixel(b) => Some(b),
            Rate::Epsilon(_) => None,
        },
        rate_trials: trials,
        epsilon: params.epsilon,
        sparsity: params.sparsity,
        capped_patches: capped.patches,
        over_epsilon_patches: capped.over_epsilon,
        worst_rmse_bound: capped.worst_rmse_bound,
        encode_ms,
        kernel_ms: time.map(|t| t.kernel_ms),
        gather_ms: times.gather_ms,
        chunks_ms: times.chunks_ms,
        compress_ms: times.compress_ms,
        bitstream_ms: times.bitstream_ms,
    };
    kit::emit(&report, &[out]);
    Ok(())
}

/// Bits of the ensemble's matrices (f32) in a `.lfc`, before compression.
fn ensemble_bits(ens: &Ensemble) -> f64 {
    (ens.k * ens.dictionary_len() * 4 * 8) as f64
}
