//! The subcommands' work: every output checked before any input is read, progress bars
//! for the long steps, one typed record at the end (`records`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Result};
use kit::output::Staged;
use lightfield::bitstream::{Compressed, Header, LFC_VERSION};
use lightfield::codec::{capped_patches, decode_lightfield_with, encode_npy_to_bytes, encode_to_bytes, CodecPath};
use lightfield::codes::{Params, MIN_EPSILON};
use lightfield::dictionary::Ensemble;
use lightfield::gpu::GpuCodec;
use lightfield::lightfield::LightField;
use lightfield::patch::PatchGrid;
use lightfield::random_access::ViewSource;
use lightfield::train::{TrainDevice, TrainOptions};
use lightfield::views::{stage_views, Depth};

use lightfield::cpu::render::render_cpu_with;
use lightfield::gpu::render::GpuRenderer;
use lightfield::render::{unpack_rgb8, PixelOrder, View};

use kit::stats::ms_since;

use crate::records::{
    DecodeReport, DecodeViewReport, EncodeReport, GenerateReport, InfoReport, RenderReport, TrainReport, ViewReport,
    Viewpoint,
};
use crate::ViewpointArgs;

/// Checks `decode`'s `.npy` output before any work; an image extension gets a pointer to
/// `--views`.
fn check_array_output(out: &Path, inputs: &[&Path]) -> Result<()> {
    let ext = out.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).unwrap_or_default();
    if kit::image::IMAGE_EXTENSIONS.contains(&ext.as_str()) {
        bail!(
            "{}: --out writes a .npy array (the only format it takes); for one image per view use --views DIR",
            out.display()
        );
    }
    kit::output::check_file(out, &["npy"], inputs)?;
    Ok(())
}

/// The GPU codec for `ens` when the backend is `gpu` (the device is named in the envelope),
/// with the workgroup tuned for `kernel` (`lightfield.encode` or `.decode`) on the device,
/// else the built-in one.
fn gpu_codec(common: &kit::CommonArgs, ens: &Ensemble, kernel: &str) -> Result<Option<GpuCodec>> {
    Ok(match common.context()? {
        Some(ctx) => Some(match kit::tuning::param(ctx.info(), kernel, "workgroup") {
            Some(workgroup) => GpuCodec::with_workgroup(&ctx, ens, workgroup)?,
            None => GpuCodec::new(&ctx, ens)?,
        }),
        None => None,
    })
}

fn patch_count(ens: &Ensemble, lf: &LightField) -> usize {
    PatchGrid::new(ens.shape, lf.u, lf.v, lf.h, lf.w).len()
}

fn codec_path(gpu: &Option<GpuCodec>) -> CodecPath<'_> {
    gpu.as_ref().map_or(CodecPath::Cpu, CodecPath::Gpu)
}

pub fn train(
    inputs: &[PathBuf],
    grid: Option<(usize, usize)>,
    out: &Path,
    opts: &TrainOptions,
    common: &kit::CommonArgs,
) -> Result<()> {
    let input_paths: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    kit::output::check_file(out, &["lfd"], &input_paths)?;
    opts.params.check(opts.shape.len())?;
    let lfs = inputs.iter().map(|p| LightField::read(p, grid)).collect::<lightfield::Result<Vec<_>>>()?;
    let ctx = common.context()?;
    let device = ctx.as_ref().map_or(TrainDevice::Cpu, TrainDevice::Gpu);
    let all: usize = lfs.iter().map(|lf| PatchGrid::new(opts.shape, lf.u, lf.v, lf.h, lf.w).len()).sum();
    // One step per assignment: after the initial dictionaries and after each update.
    let bar = kit::progress::bar(opts.iterations as u64 + 1, "train");
    let t0 = Instant::now();
    let mut last = None;
    let (ens, times) = lightfield::train::train(&lfs, opts, device, |stats| {
        bar.suspend(|| kit::emit(stats, &[]));
        bar.inc(1);
        last = Some(stats.clone());
    })?;
    bar.finish_and_clear();
    ens.write(out)?;
    let last = last.expect("training reports its final assignment");
    let report = TrainReport {
        dictionaries: ens.k,
        patch: opts.shape.to_string(),
        iterations: opts.iterations,
        training_patches: all.min(opts.max_patches),
        mean_coefficients: last.mean_coefficients,
        success_fraction: last.success_fraction,
        psnr_db: last.psnr_db,
        train_ms: ms_since(t0),
        times,
    };
    kit::emit(&report, &[out]);
    Ok(())
}

/// What `encode` holds a patch or the file to.
#[derive(Clone, Copy, Debug)]
pub enum Rate {
    /// The RMSE bound per patch.
    Epsilon(f32),
    /// The most bits per pixel of the file (its bits over views x width x height).
    BitsPerPixel(f64),
}

/// Trials of the search for the smallest epsilon whose file fits `--bpp`, after the two ends.
const RATE_SEARCH_STEPS: usize = 7;

/// The epsilon `--bpp` searches from.
const RATE_SEARCH_START: f32 = 0.02;

#[allow(clippy::too_many_arguments)]
pub fn encode(
    input: &Path,
    grid: Option<(usize, usize)>,
    dict: &Path,
    sparsity: usize,
    rate: Rate,
    out: &Path,
    strict: bool,
    common: &kit::CommonArgs,
) -> Result<()> {
    kit::output::check_file(out, &["lfc"], &[input, dict])?;
    let ens = Ensemble::read(dict)?;
    let epsilon = match rate {
        Rate::Epsilon(e) => e,
        Rate::BitsPerPixel(_) => RATE_SEARCH_START,
    };
    let mut params = Params { sparsity, epsilon };
    params.check(ens.shape.len())?;
    let gpu = gpu_codec(common, &ens, "lightfield.encode")?;
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
                bail!(
                    "--bpp {bpp}: the coarsest encode (--epsilon 1) takes {:.4} bits per pixel \
                     (the dictionaries alone take {:.4}); give a larger --bpp or a smaller ensemble",
                    coarsest.1.len() as f64 * 8.0 / pixels,
                    ensemble_bits(&ens) / pixels
                );
            }
            (encoded, lo, hi) = (coarsest, params.epsilon, 1.0);
        }
        for _ in 0..RATE_SEARCH_STEPS {
            if hi / lo < 1.02 {
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
        bail!(
            "{} of {n} patches did not reach --epsilon {} within the sparsity cap T = {} (worst RMSE bound {:.5}); \
             nothing written (raise --sparsity or --epsilon, or drop --strict)",
            capped.over_epsilon,
            params.epsilon,
            params.sparsity,
            capped.worst_rmse_bound.unwrap_or(0.0)
        );
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

pub fn decode(
    input: &Path,
    out: Option<&Path>,
    views: Option<&Path>,
    depth: Depth,
    common: &kit::CommonArgs,
) -> Result<()> {
    if let Some(out) = out {
        check_array_output(out, &[input])?;
    }
    if let Some(dir) = views {
        kit::output::check_folder(dir, &[input])?;
    }
    let t0 = Instant::now();
    let bytes = kit::input::read_bounded(input, kit::budget::get())?;
    let read_ms = ms_since(t0);
    let t0 = Instant::now();
    let compressed = Compressed::from_bytes(&bytes).map_err(|e| lightfield::LfError::file(input, e))?;
    let parse_ms = ms_since(t0);
    drop(bytes);
    let gpu = gpu_codec(common, &compressed.ensemble, "lightfield.decode")?;
    let n = compressed.codes.len();
    let bar = kit::progress::bar(n as u64, "decode");
    let t0 = Instant::now();
    let (lf, time) = decode_lightfield_with(&compressed, codec_path(&gpu), |done| bar.set_position(done as u64))?;
    bar.finish_and_clear();
    let decode_ms = ms_since(t0);
    // The views and the array are staged together and committed last, so a failure while
    // staging leaves no output; the array is staged after the views so that a view that
    // cannot be renamed into place (a folder of its name) fails before the array lands.
    let (mut staged, view_paths) = match views {
        Some(dir) => {
            let bar = kit::progress::bar((lf.u * lf.v) as u64, "views");
            let staged = stage_views(&lf, dir, depth, |done| bar.set_position(done as u64))?;
            bar.finish_and_clear();
            staged
        }
        None => (Staged::new(), Vec::new()),
    };
    if let Some(out) = out {
        lf.stage_npy(&mut staged, out)?;
    }
    staged.commit()?;
    let views_written = view_paths.len();
    let report = DecodeReport {
        shape: lf.shape(),
        views_written,
        depth_bits: views.map(|_| depth.bits()),
        decode_ms,
        read_ms,
        parse_ms,
        upload_kernels_ms: time.map(|t| t.host_stage_ms + t.host_wait_ms),
        scatter_ms: time.map(|t| t.host_prepare_ms),
        kernel_ms: time.map(|t| t.kernel_ms),
    };
    let outs: Vec<&Path> = out.into_iter().chain(views).collect();
    kit::emit(&report, &outs);
    Ok(())
}

pub fn info(path: &Path) -> Result<()> {
    let bytes = kit::input::read_bounded(path, kit::budget::get())?;
    let file_error = |e| lightfield::LfError::file(path, e);
    let header = Header::parse(&bytes).map_err(file_error)?;
    let c = Compressed::from_bytes(&bytes).map_err(file_error)?;
    let n = c.codes.len();
    let samples: usize = c.size.iter().product::<usize>() * lightfield::lightfield::COLOURS;
    let mut usage = vec![0usize; c.ensemble.k];
    c.codes.membership.iter().for_each(|&m| usage[m as usize] += 1);
    let report = InfoReport {
        file: path.display().to_string(),
        bytes: bytes.len(),
        format_version: LFC_VERSION,
        views: [c.size[0], c.size[1]],
        height: c.size[2],
        width: c.size[3],
        patch: c.ensemble.shape.to_string(),
        dictionaries: c.ensemble.k,
        sparsity: c.params.sparsity,
        epsilon: c.params.epsilon,
        step: c.step,
        patches: n,
        coefficients: header.coefficients,
        mean_coefficients: header.coefficients as f64 / n as f64,
        capped_patches: (0..n).filter(|&p| c.codes.count(p) == c.params.sparsity).count(),
        dictionaries_used: usage.iter().filter(|&&u| u > 0).count(),
        bits_per_sample: bytes.len() as f64 * 8.0 / samples as f64,
        payload_bytes: header.payload_len,
        compressed_payload_bytes: header.frame_len,
    };
    kit::emit(&report, &[]);
    Ok(())
}

pub fn generate(out: &Path, views: (usize, usize), size: (u32, u32), seed: u64) -> Result<()> {
    // Not `check_array_output`: its pointer to decode's `--views DIR` means nothing here.
    kit::output::check_file(out, &["npy"], &[])?;
    let (w, h) = (size.0 as usize, size.1 as usize);
    let dims = [views.0 as u64, views.1 as u64, h as u64, w as u64, lightfield::lightfield::COLOURS as u64];
    kit::budget::elements(&dims, 4, "the generated light field")?;
    let spinner = kit::progress::spinner("generate");
    let t0 = Instant::now();
    let lf = lightfield::synth::generate(views, (w, h), seed);
    lf.write_npy(out)?;
    spinner.finish_and_clear();
    kit::emit(&GenerateReport { shape: lf.shape(), seed, generate_ms: ms_since(t0) }, &[out]);
    Ok(())
}

pub fn demo(out: &Path, run: &kit::cli::RunArgs) -> Result<()> {
    kit::output::check_folder(out, &[])?;
    kit::output::check_files_in(out, &lightfield::demo::FILES)?;
    let ctx = run.context()?;
    let spinner = kit::progress::spinner("demo");
    let report = lightfield::demo::run(out, &ctx)?;
    spinner.finish_and_clear();
    kit::emit(&report, &[out]);
    Ok(())
}

/// The shortest window side `view` opens by default: tiny light fields are scaled up.
const MIN_WINDOW: u32 = 512;

/// The viewpoint `args` names for a light field of `size`, at `default_size` unless
/// `--size` says otherwise; checked against the captured views.
fn viewpoint(args: &ViewpointArgs, size: [usize; 4], default_size: (u32, u32)) -> Result<View> {
    let centre = View::centre(size);
    let (width, height) = args.size.unwrap_or(default_size);
    let position = args.view.map_or(centre.position, |(u, v)| [u, v]);
    let view = View { position, focus: args.focus, aperture: args.aperture, width, height };
    view.check(size)?;
    Ok(view)
}

pub fn render(input: &Path, args: &ViewpointArgs, out: &Path, common: &kit::CommonArgs) -> Result<()> {
    kit::output::check_file(out, kit::image::IMAGE_EXTENSIONS, &[input])?;
    let compressed = Compressed::read(input)?;
    let [_, _, h, w] = compressed.size;
    let view = viewpoint(args, compressed.size, (w as u32, h as u32))?;
    // The packed frame and its RGB copy.
    kit::budget::elements(&[view.height as u64, view.width as u64], 4 + 3, "the rendered image")?;
    let ctx = common.context()?;
    let t0 = Instant::now();
    let (pixels, decode_ms) = match &ctx {
        Some(ctx) => {
            let codec = GpuCodec::new(ctx, &compressed.ensemble)?;
            let (lf, _) = lightfield::codec::decode_lightfield(&compressed, CodecPath::Gpu(&codec))?;
            let decode_ms = ms_since(t0);
            (GpuRenderer::new(ctx, &lf)?.render(&view, PixelOrder::Rgba)?, decode_ms)
        }
        None => {
            let (lf, _) = lightfield::codec::decode_lightfield(&compressed, CodecPath::Cpu)?;
            let decode_ms = ms_since(t0);
            let bar = kit::progress::bar(view.height as u64, "render");
            let pixels = render_cpu_with(&lf, &view, PixelOrder::Rgba, &|| bar.inc(1))?;
            bar.finish_and_clear();
            (pixels, decode_ms)
        }
    };
    let render_ms = ms_since(t0) - decode_ms;
    let rgb = unpack_rgb8(&pixels, PixelOrder::Rgba);
    kit::image::save_rgb8(out, view.width as usize, view.height as usize, &rgb)?;
    let report = RenderReport { viewpoint: Viewpoint::from(&view), decode_ms, render_ms };
    kit::emit(&report, &[out]);
    Ok(())
}

pub fn view(
    input: &Path,
    args: &ViewpointArgs,
    frames: Option<u64>,
    screenshot: Option<PathBuf>,
    run: &kit::cli::RunArgs,
) -> Result<()> {
    if let Some(shot) = &screenshot {
        kit::output::check_file(shot, kit::image::IMAGE_EXTENSIONS, &[input])?;
    }
    // The header, table and ensemble are checked before a window opens; the sections are
    // parsed while the views decode into device memory.
    let bytes = kit::input::read_bounded(input, kit::budget::get())?;
    let (header, _, ensemble) = lightfield::bitstream::open(&bytes).map_err(|e| lightfield::LfError::file(input, e))?;
    let size = header.size;
    let [_, _, h, w] = size;
    let scale = MIN_WINDOW.div_ceil(w.max(h) as u32).max(1);
    let window = ((w as u32 * scale).min(16384), (h as u32 * scale).min(16384));
    let view = viewpoint(args, size, window)?;
    let shot = screenshot.clone();
    let options =
        crate::viewer::Options { bytes, size, ensemble, view, frames, screenshot, device: run.device.clone() };
    let shown = crate::viewer::run(options)?;
    let report =
        ViewReport { frames: shown.frames, viewpoint: Viewpoint::from(&shown.view), decode_ms: shown.decode_ms };
    let outs: Vec<&Path> = shot.as_deref().into_iter().collect();
    kit::emit(&report, &outs);
    Ok(())
}

pub fn decode_view(input: &Path, (u, v): (usize, usize), out: &Path, common: &kit::CommonArgs) -> Result<()> {
    let mut accepted = kit::image::IMAGE_EXTENSIONS.to_vec();
    accepted.push("npy");
    let format = kit::output::check_file(out, &accepted, &[input])?;
    let bytes = kit::input::read_bounded(input, kit::budget::get())?;
    let source = ViewSource::open(&bytes).map_err(|e| lightfield::LfError::file(input, e))?;
    let [nu, nv, h, w] = source.size();
    if u >= nu || v >= nv {
        bail!("--view {u},{v} is not one of the {nu}x{nv} views (rows 0 to {}, columns 0 to {})", nu - 1, nv - 1);
    }
    let gpu = gpu_codec(common, source.ensemble(), "lightfield.decode")?;
    let t0 = Instant::now();
    let (samples, sections) =
        source.decode_view(codec_path(&gpu), (u, v)).map_err(|e| lightfield::LfError::file(input, e))?;
    let decode_ms = ms_since(t0);
    if format == "npy" {
        kit::npy::write_f32(out, &[h, w, lightfield::lightfield::COLOURS], &samples)?;
    } else {
        let rgb: Vec<u8> = samples.iter().map(|&x| kit::image::to_u8(x)).collect();
        kit::image::save_rgb8(out, w, h, &rgb)?;
    }
    let report = DecodeViewReport { view: [u, v], width: w, height: h, decode_ms, sections };
    kit::emit(&report, &[out]);
    Ok(())
}
