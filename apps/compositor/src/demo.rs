//! `composite demo`: the compositor's part of the project demo. A small generated point
//! cloud is split across four simulated ranks in one process; each share is rendered and
//! Active Pixel encoded on the GPU (checked byte for byte against the CPU encoder), the
//! encoded images are composited on the CPU and on the GPU without decoding, and the result
//! is checked pixel for pixel against a single-pass render of the whole scene. Writes PNGs,
//! `.ap` files and `summary.json` to the output folder.

use std::path::Path;

use engine::Context;
use serde_json::json;

use crate::ap::{ApImage, Encoded};
use crate::error::{CompositorError, Result};
use crate::frame::Frame;
use crate::gpu_blend::GpuBlender;
use crate::gpu_encode::GpuEncoder;
use crate::ops::{composite, Op};
use crate::raster::Rasteriser;
use crate::scene::Scene;

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
    if encoded != crate::codec::encode_serial(&frame) {
        return Err(CompositorError::Corrupt(format!("rank {rank}: GPU and CPU encodings differ")));
    }
    Ok((encoded, frame))
}

/// Runs the demo into `out` (created if missing) and returns its JSON summary, whose
/// `summary` field is the one-line description.
pub fn run(out: &Path, device: Option<&str>) -> Result<serde_json::Value> {
    std::fs::create_dir_all(out).map_err(|source| CompositorError::Io { path: out.to_path_buf(), source })?;
    let ctx = Context::open(device)?;
    let scene = Scene::load(SCENE)?;
    let raster = Rasteriser::new(&ctx, WIDTH, HEIGHT)?;
    let mut encoder = GpuEncoder::new(&ctx)?;
    let background = [16, 16, 24, 255];
    let mut encoded = Vec::new();
    let mut ranks_json = Vec::new();
    for rank in 0..RANKS {
        let (e, frame) = render_encode(&ctx, &raster, &mut encoder, &scene, rank, RANKS)?;
        let image = ApImage::new(WIDTH, HEIGHT, background, e.clone())?;
        image.write(&out.join(format!("rank{rank}.ap")))?;
        frame.save(&out.join(format!("rank{rank}.png")), None, background)?;
        ranks_json.push(json!({"rank": rank, "ap_bytes": e.bytes(), "active_pixels": e.active_pixels(),
            "ap_pct_of_raw": 100.0 * e.bytes() as f64 / (8 * frame.pixels()) as f64}));
        encoded.push(e);
    }
    let inputs: Vec<&Encoded> = encoded.iter().collect();
    let cpu = composite(&inputs, Op::ZBuffer)?;
    let gpu = GpuBlender::new(&ctx)?.composite(&inputs, Op::ZBuffer)?;
    let over = composite(&inputs, Op::Over)?;
    let (single, _) = render_encode(&ctx, &raster, &mut encoder, &scene, 0, 1)?;
    let gpu_matches = gpu == cpu;
    let single_matches = single == cpu;
    ApImage::new(WIDTH, HEIGHT, background, cpu.clone())?.write(&out.join("composite.ap"))?;
    crate::codec::decode(&cpu, WIDTH, HEIGHT).save(
        &out.join("composite.png"),
        Some(&out.join("composite_depth.npy")),
        background,
    )?;
    crate::codec::decode(&over, WIDTH, HEIGHT).save(&out.join("over.png"), None, background)?;
    let raw = 8 * WIDTH as usize * HEIGHT as usize;
    let total_ap: usize = encoded.iter().map(Encoded::bytes).sum();
    let line = format!(
        "composite demo: {RANKS} ranks x {SCENE} at {WIDTH}x{HEIGHT} on {}: AP payloads {:.1}% of raw (GPU == CPU bytes), \
         GPU composite == CPU: {gpu_matches}, == single-pass render: {single_matches}; wrote {}",
        ctx.info().name,
        100.0 * total_ap as f64 / (RANKS * raw) as f64,
        out.join("composite.png").display()
    );
    let summary = json!({"scene": SCENE, "ranks": RANKS, "width": WIDTH, "height": HEIGHT, "device": ctx.info().name,
        "per_rank": ranks_json, "raw_bytes_per_rank": raw, "composite_ap_bytes": cpu.bytes(),
        "gpu_composite_matches_cpu": gpu_matches, "composite_matches_single_pass": single_matches,
        "files": ["rank0..3.ap", "rank0..3.png", "composite.ap", "composite.png", "composite_depth.npy", "over.png"],
        "summary": line});
    let text = serde_json::to_string_pretty(&summary).unwrap_or_default();
    engine::io::write_atomic(&out.join("summary.json"), |w| {
        std::io::Write::write_all(w, text.as_bytes())
            .map_err(|e| engine::EngineError::File { path: out.join("summary.json"), message: e.to_string() })
    })?;
    if !(gpu_matches && single_matches) {
        return Err(CompositorError::Corrupt(line));
    }
    Ok(summary)
}
