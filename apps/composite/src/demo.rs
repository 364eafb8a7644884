//! `composite demo`: the compositor's part of the project demo. A small generated point
//! cloud is split across four simulated ranks in one process; each share is rendered and
//! Active Pixel encoded on the GPU (checked byte for byte against the CPU encoder), the
//! encoded images are composited on the CPU and on the GPU without decoding, and the result
//! is checked pixel for pixel against a single-pass render of the whole scene. Writes PNGs,
//! `.ap` files and `summary.json` ([`FILES`]) to the output folder.

use std::path::Path;

use engine::Context;

use crate::ap::{ApImage, Encoded};
use crate::cpu::blend::composite;
use crate::cpu::encode::encode_serial;
use crate::error::{CompositeError, Result};
use crate::frame::Frame;
use crate::gpu::blend::GpuBlender;
use crate::gpu::encode::GpuEncoder;
use crate::raster::Rasteriser;
use crate::scene::Scene;
use crate::types::Op;

const SCENE: &str = "points:20000:3";
const RANKS: usize = 4;
const WIDTH: u32 = 320;
const HEIGHT: u32 = 240;

fn render_encode(
    ctx: &Context,
    raster: &Rasteriser,
    encoder: &mut GpuEncoder,
    scene: &Scene,
    rank: usize,
    ranks: usize,
) -> Result<(Encoded, Frame)> {
    let geometry = raster.upload(&scene.geometry.share(rank, ranks))?;
    let (view, proj) = scene.camera(0, WIDTH, HEIGHT);
    ctx.run(|rec| {
        raster.record(rec, &geometry, view, proj);
        Ok(())
    })?;
    let (encoded, _, _) = encoder.encode(&raster.color, &raster.depth, WIDTH, HEIGHT)?;
    let frame = Frame {
        width: WIDTH,
        height: HEIGHT,
        color: ctx.download(&raster.color)?,
        depth: ctx.download(&raster.depth)?,
    };
    if encoded != encode_serial(&frame) {
        return Err(CompositeError::EncodingsDiffer { what: format!("rank {rank}: GPU and CPU encodings") });
    }
    Ok((encoded, frame))
}

/// One simulated rank's encoded image.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RankReport {
    pub rank: usize,
    pub ap_bytes: usize,
    pub active_pixels: usize,
    pub ap_pct_of_raw: f64,
}

/// What the demo did; also written to `summary.json`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DemoReport {
    pub scene: String,
    pub ranks: usize,
    pub width: u32,
    pub height: u32,
    pub device: String,
    pub per_rank: Vec<RankReport>,
    pub raw_bytes_per_rank: usize,
    pub ap_pct_of_raw: f64,
    pub composite_ap_bytes: usize,
    pub gpu_composite_matches_cpu: bool,
    pub composite_matches_single_pass: bool,
    pub files: Vec<String>,
}

impl std::fmt::Display for DemoReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "composite demo: {} ranks x {} at {}x{} on {}: AP payloads {:.1}% of raw (GPU == CPU bytes), \
             GPU composite == CPU: {}, == single-pass render: {}",
            self.ranks,
            self.scene,
            self.width,
            self.height,
            self.device,
            self.ap_pct_of_raw,
            self.gpu_composite_matches_cpu,
            self.composite_matches_single_pass
        )
    }
}

/// The files the demo writes into its folder.
pub const FILES: [&str; 13] = [
    "rank0.ap",
    "rank0.png",
    "rank1.ap",
    "rank1.png",
    "rank2.ap",
    "rank2.png",
    "rank3.ap",
    "rank3.png",
    "composite.ap",
    "composite.png",
    "composite_depth.npy",
    "over.png",
    "summary.json",
];

/// Runs the demo on `ctx` into the folder `out` (checked by the caller) and returns its
/// report. Everything is computed before the first file is written.
pub fn run(ctx: &Context, out: &Path) -> Result<DemoReport> {
    let scene = Scene::load(&SCENE.parse().map_err(CompositeError::Scene)?)?;
    let raster = Rasteriser::new(ctx, WIDTH, HEIGHT)?;
    let mut encoder = GpuEncoder::new(ctx)?;
    let background = [16, 16, 24, 255];
    let mut encoded = Vec::new();
    let mut frames = Vec::new();
    let mut per_rank = Vec::new();
    for rank in 0..RANKS {
        let (e, frame) = render_encode(ctx, &raster, &mut encoder, &scene, rank, RANKS)?;
        per_rank.push(RankReport {
            rank,
            ap_bytes: e.bytes(),
            active_pixels: e.active_pixels(),
            ap_pct_of_raw: 100.0 * e.bytes() as f64 / (8 * frame.pixels()) as f64,
        });
        encoded.push(e);
        frames.push(frame);
    }
    let inputs: Vec<&Encoded> = encoded.iter().collect();
    let cpu = composite(&inputs, Op::ZBuffer)?;
    let gpu = GpuBlender::new(ctx)?.composite(&inputs, Op::ZBuffer)?;
    let over = composite(&inputs, Op::Over)?;
    let (single, _) = render_encode(ctx, &raster, &mut encoder, &scene, 0, 1)?;
    let raw = 8 * WIDTH as usize * HEIGHT as usize;
    let total_ap: usize = encoded.iter().map(Encoded::bytes).sum();
    let report = DemoReport {
        scene: SCENE.into(),
        ranks: RANKS,
        width: WIDTH,
        height: HEIGHT,
        device: ctx.info().name.clone(),
        per_rank,
        raw_bytes_per_rank: raw,
        ap_pct_of_raw: 100.0 * total_ap as f64 / (RANKS * raw) as f64,
        composite_ap_bytes: cpu.bytes(),
        gpu_composite_matches_cpu: gpu == cpu,
        composite_matches_single_pass: single == cpu,
        files: FILES.iter().map(|f| f.to_string()).collect(),
    };
    // Every file is staged, then all are renamed into place together (all or none).
    let mut staged = kit::output::Staged::new();
    for (rank, (e, frame)) in encoded.into_iter().zip(&frames).enumerate() {
        ApImage::new(WIDTH, HEIGHT, background, e)?.stage(&mut staged, &out.join(format!("rank{rank}.ap")))?;
        frame.stage(&mut staged, &out.join(format!("rank{rank}.png")), None, background)?;
    }
    ApImage::new(WIDTH, HEIGHT, background, cpu.clone())?.stage(&mut staged, &out.join("composite.ap"))?;
    let decoded = Frame::decode(&cpu, WIDTH, HEIGHT);
    decoded.stage(&mut staged, &out.join("composite.png"), Some(&out.join("composite_depth.npy")), background)?;
    Frame::decode(&over, WIDTH, HEIGHT).stage(&mut staged, &out.join("over.png"), None, background)?;
    staged.write_json(&out.join("summary.json"), &report)?;
    staged.commit()?;
    if !(report.gpu_composite_matches_cpu && report.composite_matches_single_pass) {
        return Err(CompositeError::Corrupt(report.to_string()));
    }
    Ok(report)
}
