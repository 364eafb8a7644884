//! MAD's two strategies, each timed as its pass of the GPU scorer (`mad::gpu::GpuMad`) on a
//! generated scene and its noisy copy, and checked (all three scores within 0.1% of the f64
//! CPU reference, the app's acceptance bound). MAD's block and workgroup shapes are private
//! constants of `mad::gpu`, so these entries have no parameters yet (see the report).

use engine::{Context, Result};
use mad::gpu::GpuMad;
use mad::synth::{distort, scene, Distortion};

use super::{time_calls, Check, Config, Floor, Kernel, Measured, Param, Reps, Shader, Sizes};

/// One of MAD's strategies.
pub enum Strategy {
    Detection,
    Appearance,
}

/// `mad::gpu`'s block statistics shape: TILE = 8, spec [TILE * TILE, TILE].
const BLOCK_SPEC: [u32; 2] = [64, 8];

to_engine_for!(mad::MadError, InvalidInput);

impl Kernel for Strategy {
    fn params(&self) -> Vec<Param> {
        Vec::new()
    }
    fn sizes(&self) -> Sizes {
        Sizes { unit: "pixels (edge)", default: &[512, 1024, 2048], tiny: [40, 64], max: 8192 }
    }
    fn footprint(&self, size: u64) -> u64 {
        // The pair and the CPU reference's 20 subbands of both images in f64, and as much
        // again on the GPU in f32.
        size * size * (2 * 8 + 2 * 20 * 8 + 2 * 20 * 4 + 64)
    }
    fn run(&self, ctx: &Context, _config: &Config, size: u64, reps: Reps) -> Result<Measured> {
        let edge = size as usize;
        let reference = scene(edge, edge, 1);
        let distorted = distort(&reference, Distortion::Noise(8.0), 2);
        let gpu = GpuMad::new(ctx).map_err(to_engine)?;
        let pass = match self {
            Strategy::Detection => "detection",
            Strategy::Appearance => "appearance",
        };
        let mut scores = None;
        let once = |scores: &mut Option<mad::Scores>| -> Result<f64> {
            let passes = gpu
                .score_stream([((), &reference, &distorted)], Some(1), false, |s| *scores = Some(s.scores))
                .map_err(to_engine)?;
            // A stage is one mark ("appearance") or several named after it ("appearance:
            // filter", ...), summed.
            let sub = format!("{pass}:");
            Ok(passes.iter().filter(|p| p.name == pass || p.name.starts_with(&sub)).map(|p| p.ms).sum())
        };
        once(&mut scores)?;
        let times_ms = time_calls(ctx, reps, || once(&mut scores))?;
        let (want, _) = mad::cpu::score(&reference, &distorted).map_err(to_engine)?;
        let got = scores.expect("score_stream hands back its one pair");
        let rel = |a: f64, b: f64| if a == b { 0.0 } else { (a - b).abs() / b.abs().max(1e-12) };
        let worst = [(got.mad, want.mad), (got.detection, want.detection), (got.appearance, want.appearance)]
            .iter()
            .map(|&(a, b)| rel(a, b))
            .fold(0.0, f64::max);
        let check = Check { passed: worst < 1e-3, max_error: worst, tolerance: 1e-3 };
        let pixels = size * size;
        let (floor, spirv) = match self {
            // Reference, error and contrast map in f32.
            Strategy::Detection => (Floor::Bytes(3 * 4 * pixels), mad::shaders::DETECT_BLOCKS),
            // 20 subband magnitudes of both images in f32.
            Strategy::Appearance => (Floor::Bytes(2 * 20 * 4 * pixels), mad::shaders::APPEAR_BLOCKS),
        };
        Ok(Measured { times_ms, floor, check, shader: Some(Shader { spirv, spec: BLOCK_SPEC.to_vec() }) })
    }
}
