//! `lightfield demo`: the light-field part of the main-job demo. Generates a small training
//! scene and a test scene, trains a small ensemble, encodes and decodes the test scene on
//! the GPU, and writes the centre view (original and decoded), the `.lfd` and `.lfc` files
//! and a JSON summary into the output folder, all or none.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use kit::output::Staged;

use crate::codec::{decode_lightfield, encode_lightfield, CodecPath, EncodeQuality};
use crate::codes::Params;
use crate::error::{LfError, Result};
use crate::gpu::GpuCodec;
use crate::patch::PatchShape;
use crate::synth::generate;
use crate::train::{train, TrainDevice, TrainOptions};
use crate::views::{stage_view, Depth};

/// What the demo did (also written as `summary.json`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct DemoReport {
    #[serde(flatten)]
    pub quality: EncodeQuality,
    pub patch: String,
    pub dictionaries: usize,
    pub sparsity: usize,
    #[serde(serialize_with = "kit::report::f32_shortest")]
    pub epsilon: f32,
    pub encode_ms: f64,
    /// The files written, in the output folder.
    #[serde(skip)]
    pub files: Vec<PathBuf>,
}

impl std::fmt::Display for DemoReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "lightfield: {}x{} views of {}x{}, K={} -> {:.3} bits/sample, PSNR {:.2} dB, encode {:.1} ms",
            self.quality.views[0],
            self.quality.views[1],
            self.quality.width,
            self.quality.height,
            self.dictionaries,
            self.quality.bits_per_sample,
            self.quality.psnr_db,
            self.encode_ms
        )
    }
}

/// The files the demo writes into its folder.
pub const FILES: [&str; 5] =
    ["dictionaries.lfd", "lightfield.lfc", "summary.json", "center_original.png", "center_decoded.png"];

/// Runs the demo on `ctx` into `out` (an existing, writable folder).
pub fn run(out: &Path, ctx: &engine::Context) -> Result<DemoReport> {
    let shape = PatchShape::PAPER;
    let views = (8, 8);
    let training = [generate(views, (48, 48), 1001)];
    let params = Params { sparsity: 600, epsilon: 0.01 };
    let opts = TrainOptions { k: 8, shape, iterations: 2, params, seed: 1, max_patches: 10_000, precluster: false };
    let (ens, _) = train(&training, &opts, TrainDevice::Cpu, |_| {})?;

    let lf = generate(views, (64, 48), 2002);
    let gpu = GpuCodec::new(ctx, &ens)?;
    let t0 = Instant::now();
    let (compressed, _) = encode_lightfield(&lf, &ens, params, CodecPath::Gpu(&gpu))?;
    let encode_ms = t0.elapsed().as_secs_f64() * 1e3;
    let lfc = compressed.to_bytes()?;
    let (decoded, _) = decode_lightfield(&compressed, CodecPath::Gpu(&gpu))?;
    let mut report = DemoReport {
        quality: EncodeQuality::new(&lf, &compressed, lfc.len(), &decoded),
        patch: shape.to_string(),
        dictionaries: ens.k,
        sparsity: params.sparsity,
        epsilon: params.epsilon,
        encode_ms,
        files: Vec::new(),
    };
    let summary = serde_json::to_string_pretty(&report).map_err(|e| LfError::Invalid(e.to_string()))?;
    let mut staged = Staged::new();
    let mut stage_bytes = |name: &str, bytes: &[u8], staged: &mut Staged| -> Result<()> {
        let path = out.join(name);
        staged.write(&path, |w| w.write_all(bytes))?;
        report.files.push(path);
        Ok(())
    };
    stage_bytes("dictionaries.lfd", &ens.to_lfd_bytes()?, &mut staged)?;
    stage_bytes("lightfield.lfc", &lfc, &mut staged)?;
    stage_bytes("summary.json", format!("{summary}\n").as_bytes(), &mut staged)?;
    let (cu, cv) = (lf.u / 2, lf.v / 2);
    for (name, field) in [("center_original.png", &lf), ("center_decoded.png", &decoded)] {
        let path = out.join(name);
        stage_view(&mut staged, &path, field, cu, cv, Depth::Bits8)?;
        report.files.push(path);
    }
    debug_assert!(report.files.iter().all(|f| FILES.iter().any(|n| f.ends_with(n))), "FILES lists {:?}", report.files);
    staged.commit()?;
    Ok(report)
}
