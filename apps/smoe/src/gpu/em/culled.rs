//! The culled EM for images: the E- and M-step over the renderer's exact tile culling, so an
//! iteration costs O(samples x kernels per tile) instead of O(samples x K), and memory is
//! O(samples + K + tile-list entries) (a 2048x1365 photo at K = 70,000 needs about as much
//! as its pixels).
//!
//! Per iteration, one submission and no host round trip but the log-likelihood partials and
//! the list size: the renderer prepares the raw records (written in place by the previous
//! M-step), builds its culling records and bins kernels to 16x16 tiles with the exact bound
//! (a kernel left out of a tile has a gate share below 1/(65536 K) at each of its pixels);
//! `em_prepare` factors every kernel's joint covariance; `em_estep_tiles` takes each pixel's
//! log-sum-exp over its tile's list; `em_mstep_boxes` reduces each kernel's statistics over
//! the pixels of the support box binning drew it in (deterministic, no atomics).
//!
//! The culling works on the gate (the coordinate marginal), not on the joint density: where
//! a kernel the bound drops would still explain a pixel's colour far better than every
//! listed kernel, the culled step differs from the dense one. On fitted models that share
//! is negligible; the tests bound the difference against the dense f64 twin.

use engine::{Context, Location};

use super::{check_samples, reg_push, Iterations, Push, CHUNK, GROUP};
use crate::data::{psnr, Grid};
use crate::em::FitReport;
use crate::gpu::{Mode, RenderSettings, Renderer};
use crate::model::{packed_len, Model};
use crate::shaders::kernels;

/// Edge of the tiles of the culled E-step (one workgroup per tile, one invocation per pixel).
pub const TILE: u32 = 16;

/// The culling's colour deviation bound: the colour means are weighted means of samples in
/// [0, 1], so the range of every iteration's means plus one is at most 2.
const SPAN: f32 = 2.0;

/// One iteration's progress.
#[derive(Clone, Copy, Debug)]
pub struct EmStep {
    pub iteration: usize,
    /// Mean joint log-likelihood per sample at this iteration's E-step.
    pub loglik: f64,
    /// PSNR of the model this iteration started from, as the GPU renders it, on the
    /// iterations that rendered it.
    pub psnr_db: Option<f64>,
}

/// Runs `iterations` culled EM iterations on the GPU from `init` (an image model fitted to
/// `grid`), calling `progress` after each; every `psnr_every` iterations (0: never) the
/// iteration also renders the model for its PSNR.
pub fn fit_gpu_culled(
    ctx: &Context,
    grid: &Grid,
    init: Model,
    iterations: usize,
    psnr_every: usize,
    mut progress: impl FnMut(EmStep),
) -> engine::Result<(Model, FitReport)> {
    if grid.coord_dims() != 2 || init.coord_dims != 2 {
        return Err(engine::EngineError::InvalidInput("the culled EM fits images".into()));
    }
    let (k, d, n) = (init.len(), init.dims(), grid.len());
    check_samples(n, d)?;
    let spec = [GROUP, d as u32, CHUNK, TILE];
    let prepare = ctx.kernel::<Push>(&kernels::EM_PREPARE, &spec)?;
    let estep = ctx.kernel::<Push>(&kernels::EM_ESTEP_TILES, &spec)?;
    let mstep = ctx.kernel::<Push>(&kernels::EM_MSTEP_BOXES, &spec)?;
    let mut renderer = Renderer::new(ctx, &init, Mode::Robust)?;
    renderer.set_span(renderer.culling().0.max(SPAN));
    let (w, h) = (grid.width() as u32, grid.height() as u32);
    let mut frame = renderer.frame(RenderSettings { tile: TILE, ..RenderSettings::new(w, h) }, 0)?;
    let tiles = (frame.tiles_x * frame.tiles_y) as usize;
    let samples = ctx.upload(&grid.samples(), "smoe fit samples")?;
    let prep = ctx.buffer::<f32>(k * (d + packed_len(d) + 1), Location::Device, "smoe fit prepared")?;
    let lse = ctx.buffer::<f32>(n, Location::Device, "smoe fit lse")?;
    let partials = ctx.buffer::<f32>(tiles, Location::Device, "smoe fit loglik partials")?;
    let (span, margin) = renderer.culling();
    let mut fit = Iterations::start(k, n, iterations);
    for iteration in 0..iterations {
        let push = Push {
            samples: n as u32,
            kernels: k as u32,
            per_group: TILE * TILE,
            reg: reg_push(grid),
            width: w,
            height: h,
            tiles_x: frame.tiles_x,
            capacity: frame.capacity() as u32,
            span,
            margin,
            ..Default::default()
        };
        let render = psnr_every > 0 && iteration % psnr_every == 0;
        let raw = renderer.raw();
        let mut rec = ctx.recorder()?;
        rec.enable_profiling(8)?;
        renderer.record_prepare(&mut rec);
        renderer.record_bins(&mut rec, &frame)?;
        if render {
            renderer.record_render(&mut rec, &frame)?;
        }
        rec.pass(&prepare).read(raw).write(&prep).push(&push).dispatch_linear((k as u32).div_ceil(GROUP))?;
        rec.pass(&estep)
            .read(&samples)
            .read(&prep)
            .read(&frame.counts)
            .read(&frame.offsets)
            .read(&frame.lists)
            .read(&frame.keys)
            .write(&lse)
            .write(&partials)
            .push(&push)
            .dispatch([frame.tiles_x, frame.tiles_y, 1])?;
        rec.pass(&mstep)
            .read(&samples)
            .read(&prep)
            .read(&lse)
            .read_write(raw)
            .read(&frame.cull)
            .read(&frame.floor)
            .push(&push)
            .dispatch_linear(k as u32)?;
        let loglik = fit.finish(ctx, rec, &partials)?;
        let psnr_db = if render {
            let rgb: Vec<f32> = bytemuck::cast_slice(&ctx.download(&frame.out)?).to_vec();
            Some(psnr(&rgb, &grid.rgb))
        } else {
            None
        };
        // Tiles whose list did not fit summed over every kernel (correct, slower): grow the
        // lists for the next iteration.
        let entries = renderer.list_entries(&frame)?;
        renderer.fit_capacity(&mut frame, entries)?;
        fit.report.list_entries = Some(entries);
        progress(EmStep { iteration, loglik, psnr_db });
    }
    fit.end(ctx, &init, renderer.raw())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::em::em_step_cpu;
    use crate::em::regularisation;
    use crate::fit::{render_psnr, Init};
    use crate::gpu::em::fit_gpu_from;

    fn random_image(w: usize, h: usize, seed: u64) -> Grid {
        let mut rng = kit::fuzz::Rng::new(seed);
        let mut g = crate::data::sample_image(w, h);
        g.rgb.iter_mut().for_each(|v| {
            *v = (0.8 * *v + 0.2 * ((rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32)).clamp(0.01, 1.0)
        });
        g
    }

    /// One culled iteration against the dense f64 twin at awkward sizes (37x29 pixels: tiles
    /// cut by both edges; 13 kernels), where culling drops nothing significant. Bounds as
    /// the dense GPU iteration's (gpu::em): f32 against f64.
    #[test]
    fn culled_iteration_matches_dense_cpu() {
        let ctx = engine::testing::context();
        let grid = random_image(37, 29, 3);
        let init = Init::Kmeans.model(&grid, 13, &mut || {});
        let (want, want_ll) = em_step_cpu(&init, &grid.samples(), &regularisation(&grid)).unwrap();
        let (got, report) = fit_gpu_culled(ctx, &grid, init, 1, 1, |_| {}).unwrap();
        crate::gpu::em::assert_step_matches(&got, report.loglik[0], &want, want_ll);
        engine::testing::assert_no_validation_messages();
    }

    /// Culled against dense GPU EM over several iterations on a model dense enough that
    /// culling drops most kernels from most tiles (96x80 pixels, 150 kernels): the
    /// log-likelihood trace within 1e-3 (relative), the rendered PSNR within 0.05 dB, and
    /// the PSNR the culled run reports while fitting equal to the renderer's.
    #[test]
    fn culled_fit_matches_dense_fit() {
        let ctx = engine::testing::context();
        let grid = random_image(96, 80, 4);
        let init = Init::Kmeans.model(&grid, 150, &mut || {});
        let iterations = 4;
        let (dense, d) = fit_gpu_from(ctx, &grid, init.clone(), iterations, |_, _| {}).unwrap();
        let mut seen = Vec::new();
        let (culled, c) = fit_gpu_culled(ctx, &grid, init.clone(), iterations, 3, |s| seen.push(s)).unwrap();
        eprintln!("loglik dense {:?} culled {:?}", d.loglik, c.loglik);
        for (a, b) in c.loglik.iter().zip(&d.loglik) {
            assert!((a - b).abs() <= 1e-3 * b.abs().max(1.0), "culled {:?} dense {:?}", c.loglik, d.loglik);
        }
        let (pd, pc) = (render_psnr(ctx, &dense, &grid).unwrap(), render_psnr(ctx, &culled, &grid).unwrap());
        eprintln!("PSNR dense {pd:.3} dB, culled {pc:.3} dB");
        assert!((pd - pc).abs() <= 0.05, "dense {pd} culled {pc}");
        let (entries, tiles) = (c.list_entries.unwrap(), 6 * 5);
        eprintln!("{} kernels per tile of {}", entries / tiles, init.len());
        assert!(entries < tiles * init.len() / 2, "culling kept {entries} of {}", tiles * init.len());
        assert_eq!(seen.len(), iterations);
        assert!(seen[1].psnr_db.is_none());
        let start = render_psnr(ctx, &init, &grid).unwrap();
        let reported = seen[0].psnr_db.unwrap();
        assert!((reported - start).abs() < 1e-3, "reported {reported}, renderer {start}");
        engine::testing::assert_no_validation_messages();
    }
}
