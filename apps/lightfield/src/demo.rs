//! `lightfield demo`: the light-field part of the main-job demo. Generates a small training
//! scene and a test scene, trains a small ensemble, encodes and decodes the test scene on
//! the GPU, and writes the centre view (original and decoded), the `.lfd` and `.lfc` files
//! and a JSON summary into the output folder, all or none.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use kit::output::Staged;

use crate::codec::{decode_lightfield, encode_lightfield, CodecPath};
use crate::codes::Params;
use crate::error::{LfError, Result};
use crate::gpu::GpuCodec;
use crate::lightfield::psnr;
use crate::patch::PatchShape;
use crate::synth::generate;
use crate::train::{train, TrainDevice, TrainOptions};
use crate::views::{stage_view, Depth};

/// What the demo did (also written as `summary.json`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct DemoReport {
    pub views: [usize; 2],
    pub width: usize,
    pub height: usize,
    pub patch: String,
    pub dictionaries: usize,
    pub sparsity: usize,
    pub epsilon: f32,
    pub patches: usize,
    pub mean_coefficients: f64,
    pub bytes: usize,
    pub bits_per_sample: f64,
    pub psnr_db: f64,
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
            self.views[0],
            self.views[1],
            self.width,
            self.height,
            self.dictionaries,
            self.bits_per_sample,
            self.psnr_db,
            self.encode_ms
        )
    }
}

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
    let n = compressed.codes.len();
    let mut report = DemoReport {
        views: [lf.u, lf.v],
        width: lf.w,
        height: lf.h,
        patch: shape.to_string(),
        dictionaries: ens.k,
        sparsity: params.sparsity,
        epsilon: params.epsilon,
        patches: n,
        mean_coefficients: compressed.codes.locations.len() as f64 / n as f64,
        bytes: lfc.len(),
        bits_per_sample: lfc.len() as f64 * 8.0 / lf.samples() as f64,
        psnr_db: psnr(&lf.data, &decoded.data),
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
    staged.commit()?;
    Ok(report)
}
