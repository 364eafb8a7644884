//! SMoE rendering: the per-tile blend (`smoe.render`) and the binning of kernels to tiles
//! (`smoe.bin`), on a deterministic image model (`smoe::fit::grid_init` on the generated
//! scene: one kernel per 16x16 pixels), checked against the f64 reference renderer.

use engine::{Context, Result};
use smoe::gpu::{Cull, Mode, RenderSettings, Renderer};
use smoe::model::Model;

use super::{time_pass, Check, Config, Floor, Kernel, Measured, Param, Reps, Shader, Sizes};

/// The render's registry name, the key of its tuned tile edge in the tuning file.
pub const RENDER: &str = "smoe.render";

/// Tile edges (`RenderSettings::tile`) swept; the renderer's workgroup is min(tile, 16)
/// squared. The app reads a tuned one only from these (`kit::tuning::READ`).
fn blocks() -> &'static [u32] {
    kit::tuning::accepted(RENDER, "block").expect("kit::tuning::READ lists smoe.render's block")
}

/// smoe's render kernel's specialization constants 0-4 as `Renderer` builds them: edge, p,
/// robust, edge, CHUNK (64: `smoe::gpu`'s private constant; see the report for the API
/// that would hand it out).
fn render_spec(block: u32) -> Vec<u32> {
    let edge = block.min(16);
    vec![edge, 2, 0, edge, 64]
}

/// FLOPs of one kernel evaluated at one pixel in 2D (offset 2, quadratic form 5, exp 4,
/// affine expert 12, accumulation 4): an estimate for the floor.
const FLOPS_PER_EVALUATION: u64 = 27;

/// Edge of the crops checked against the reference.
const CHECK_CROP: usize = 64;

fn model(edge: usize) -> Model {
    let grid = smoe::data::sample_image(edge, edge);
    let k = (edge / 16).pow(2).max(4);
    smoe::fit::grid_init(&grid, k)
}

/// Renders the model once per repetition; returns the chosen pass's times, the tile-list
/// entries and the check against the reference.
fn render(ctx: &Context, block: u32, size: u64, reps: Reps, pass: &str) -> Result<(Vec<f64>, usize, Check)> {
    let edge = size as usize;
    let model = model(edge);
    let mut renderer = Renderer::new(ctx, &model, Mode::Fast)?;
    let settings = RenderSettings { tile: block, cull: Cull::Exact, ..RenderSettings::new(edge as u32, edge as u32) };
    let (got, entries) = renderer.render_rgb(settings)?;
    // The f64 reference costs pixels x kernels, so at the sizes users run it checks three
    // crops (corner, centre, far corner), every pixel of an image up to 64 x 64.
    let crop = edge.min(CHECK_CROP);
    let (mut have, mut want) = (Vec::new(), Vec::new());
    for at in [0, (edge - crop) / 2, edge - crop] {
        want.extend(smoe::cpu::render::render_region(&model, edge, edge, [0.0, 0.0], [at, at, crop, crop]));
        for row in at..at + crop {
            have.extend(got[3 * (row * edge + at)..3 * (row * edge + at + crop)].iter().map(|&v| f64::from(v)));
        }
    }
    // The renderer's own tests hold it to 1/4096 of the reference.
    let check = Check::close(have, want, 1.0 / 4096.0);
    let frame = renderer.frame(settings, entries.max(1))?;
    let times = time_pass(ctx, reps, pass, |rec| renderer.record(rec, &frame))?;
    Ok((times, entries, check))
}

/// The per-tile blend of SMoE rendering.
pub struct Render;

impl Kernel for Render {
    fn params(&self) -> Vec<Param> {
        vec![Param::new("block", blocks(), 16, "tile edge in pixels; the workgroup is min(block, 16) squared")]
    }
    fn sizes(&self) -> Sizes {
        Sizes { unit: "pixels (edge)", default: &[512, 1024, 2048], tiny: [32, 48], max: 8192 }
    }
    fn footprint(&self, size: u64) -> u64 {
        // The scene, the f32 rendering, and the GPU's output and lists.
        let pixels = size * size;
        pixels * (3 * 8 + 3 * 4 + 12 + 64) + (1 << 20)
    }
    fn run(&self, ctx: &Context, config: &Config, size: u64, reps: Reps) -> Result<Measured> {
        let block = config.get("block");
        let (times_ms, entries, check) = render(ctx, block, size, reps, "render")?;
        let per_tile = u64::from(block) * u64::from(block);
        Ok(Measured {
            times_ms,
            floor: Floor::Flops(entries as u64 * per_tile * FLOPS_PER_EVALUATION),
            check,
            shader: Some(Shader { spirv: smoe::shaders::SMOE_RENDER, spec: render_spec(block) }),
        })
    }
}

/// Binning of kernels to tiles (two passes over the kernels and the list allocation).
pub struct Bin;

impl Kernel for Bin {
    fn params(&self) -> Vec<Param> {
        vec![Param::new("block", blocks(), 16, "tile edge in pixels (sets the number of tiles to bin into)")]
    }
    // Binning runs inside the render at the same sizes.
    fn sizes(&self) -> Sizes {
        Render.sizes()
    }
    fn footprint(&self, size: u64) -> u64 {
        Render.footprint(size)
    }
    fn run(&self, ctx: &Context, config: &Config, size: u64, reps: Reps) -> Result<Measured> {
        let block = config.get("block");
        let (times_ms, entries, check) = render(ctx, block, size, reps, "bin")?;
        let kernels = model(size as usize).len() as u64;
        Ok(Measured {
            times_ms,
            // Culling records read twice (12 floats), each list entry written once.
            floor: Floor::Bytes(2 * 48 * kernels + 4 * entries as u64),
            check,
            // The bin kernel's spec as `Renderer::new` builds it: 64 invocations, p, robust.
            shader: Some(Shader { spirv: smoe::shaders::SMOE_BIN, spec: vec![64, 2, 0] }),
        })
    }
}
