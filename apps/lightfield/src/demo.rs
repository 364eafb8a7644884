//! `lightfield demo`: the light-field part of the main-job demo. Generates a small training
//! scene and a test scene, trains a small ensemble, encodes and decodes the test scene on
//! the GPU, and writes the centre view (original and decoded), the `.lfd` and `.lfc` files
//! and a JSON summary into the output folder.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use crate::codec::{decode_lightfield, encode_lightfield, Backend};
use crate::encoder::Params;
use crate::error::{LfError, Result};
use crate::gpu::GpuCodec;
use crate::lightfield::{psnr, LightField};
use crate::patch::PatchShape;
use crate::synth::generate;
use crate::train::{train, TrainDevice, TrainOptions};

fn save_view(lf: &LightField, path: &Path) -> Result<()> {
    let rgb: Vec<u8> = lf.view(lf.u / 2, lf.v / 2).iter().map(|&x| engine::io::to_u8(x)).collect();
    Ok(engine::io::save_png_rgb8(path, lf.w, lf.h, &rgb)?)
}

/// Runs the demo into `out` (created if missing); returns the one-line summary.
pub fn run(out: &Path, device: Option<&str>) -> Result<String> {
    std::fs::create_dir_all(out).map_err(|e| LfError::file(out, e))?;
    let ctx = engine::Context::open(device)?;
    let shape = PatchShape::PAPER;
    let views = (8, 8);
    let training = [generate(views, (48, 48), 1001)];
    let params = Params { sparsity: 600, epsilon: 0.01 };
    let opts = TrainOptions { k: 8, shape, iterations: 2, params, seed: 1, max_patches: 10_000 };
    let ens = train(&training, &opts, TrainDevice::Cpu, |_| {})?;
    ens.write(&out.join("dictionaries.lfd"))?;

    let lf = generate(views, (64, 48), 2002);
    let gpu = GpuCodec::new(&ctx, &ens)?;
    let t0 = Instant::now();
    let (compressed, _) = encode_lightfield(&lf, &ens, params, Backend::Gpu(&gpu))?;
    let seconds = t0.elapsed().as_secs_f64();
    let bytes = compressed.write(&out.join("lightfield.lfc"))?;
    let (decoded, _) = decode_lightfield(&compressed, Backend::Gpu(&gpu))?;
    save_view(&lf, &out.join("center_original.png"))?;
    save_view(&decoded, &out.join("center_decoded.png"))?;
    let bits_per_sample = bytes as f64 * 8.0 / lf.samples() as f64;
    let quality = psnr(&lf.data, &decoded.data);
    let n = compressed.codes.len();
    let summary = json!({
        "device": ctx.info().name,
        "views": [lf.u, lf.v], "width": lf.w, "height": lf.h, "patch": shape.to_string(),
        "dictionaries": ens.k, "sparsity": params.sparsity, "epsilon": params.epsilon,
        "patches": n, "mean_coefficients": compressed.codes.locations.len() as f64 / n as f64,
        "bytes": bytes, "bits_per_sample": bits_per_sample, "psnr_db": quality, "encode_seconds": seconds,
    });
    let text = serde_json::to_string_pretty(&summary).expect("json");
    engine::io::write_atomic(&out.join("summary.json"), |w| {
        use std::io::Write;
        w.write_all(text.as_bytes()).map_err(|e| engine::EngineError::InvalidInput(e.to_string()))
    })?;
    Ok(format!(
        "lightfield: {}x{} views of {}x{}, K={} -> {:.3} bits/sample, PSNR {:.2} dB, encode {:.2} s on {}",
        lf.u,
        lf.v,
        lf.w,
        lf.h,
        ens.k,
        bits_per_sample,
        quality,
        seconds,
        ctx.info().name
    ))
}
