//! `composite render`: a scene split across the MPI ranks (one rank without `mpirun`),
//! rendered and composited; rank 0 writes the last frame.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use composite::comm::Comm;
use composite::distributed::{self, FrameStats, Readback, RenderRequest};
use composite::scene::SceneSpec;
use composite::schedule::Strategy;
use composite::CompositeError;
use kit::image::IMAGE_EXTENSIONS;
use kit::{Backend, CommonArgs};

use super::{end_failed_job, world};
use crate::records::Rendered;

#[derive(Args)]
pub struct RenderArgs {
    /// A folder of .obj files, or points:N[:seed] (a generated cloud of N points)
    #[arg(long, value_name = "DIR|points:N[:seed]")]
    scene: SceneSpec,
    /// Image size WxH, each side 1-16384
    #[arg(long, value_name = "WxH", value_parser = kit::cli::parse_size)]
    size: (u32, u32),
    /// Image to write on rank 0 (.png, .jpg, .tif, .bmp or .webp): the last frame
    #[arg(long)]
    out: PathBuf,
    /// Frames to render (the camera circles the scene by 2 degrees a frame)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    frames: u32,
    /// How the ranks exchange spans
    #[arg(long, value_enum, default_value_t = Strategy::BinarySwap)]
    strategy: Strategy,
    /// Exchange raw pixels instead of Active Pixel encoded ones
    #[arg(long)]
    no_compress: bool,
    /// Also write each rank's last partial image to DIR as rank{r}.rgba (RGBA8) and
    /// rank{r}.depth (f32), e.g. to run another compositor on the same images
    #[arg(long, value_name = "DIR")]
    partials: Option<PathBuf>,
    #[command(flatten)]
    common: CommonArgs,
}

pub fn run(args: RenderArgs) -> Result<()> {
    // Frames allocate and free tens of MB of host buffers each (kit::heap says why).
    kit::heap::keep_large_allocations();
    let comm = world()?;
    match render_ranks(comm.as_ref(), &args) {
        Err(e) if matches!(e.downcast_ref::<CompositeError>(), Some(CompositeError::Rank { .. })) => {
            end_failed_job(comm, e)
        }
        result => result,
    }
}

/// Ends every rank of the job after an error on this one during the exchange (where the
/// other ranks would wait for it forever), printed as kit prints errors.
fn abort_job(comm: &dyn Comm, error: CompositeError) -> ! {
    let message = distributed::message(&error);
    kit::print_error(&CompositeError::Rank { rank: comm.rank(), message }.into());
    comm.abort(1)
}

/// The outputs' checks, on every rank before any work: rank 0 writes `--out`, every rank
/// writes into `--partials`. The ranks agree on the outcome, so none waits for one that
/// stopped.
fn check_outputs(comm: &dyn Comm, args: &RenderArgs) -> Result<(), CompositeError> {
    let checks = || -> Result<(), kit::KitError> {
        // The folder first: `--out` naming the same path then fails here as a folder,
        // instead of after the render.
        if let Some(dir) = &args.partials {
            kit::output::check_folder(dir, &[])?;
        }
        if comm.rank() == 0 {
            kit::output::check_file(&args.out, IMAGE_EXTENSIONS, &[])?;
            let (w, h) = args.size;
            kit::image::check_size(&args.out, w.into(), h.into(), kit::image::Layout::Rgba8)?;
        }
        Ok(())
    };
    distributed::agree(comm, checks().map_err(Into::into))
}

/// This rank's part of `composite render`.
fn render_ranks(comm: &dyn Comm, args: &RenderArgs) -> Result<()> {
    check_outputs(comm, args)?;
    // Rasterisation is always on the GPU; the backend picks where encoding runs.
    let readback = match (args.no_compress, args.common.backend) {
        (true, _) => Readback::Raw,
        (false, Backend::Gpu) => Readback::GpuAp,
        (false, Backend::Cpu) => Readback::CpuAp,
    };
    let (width, height) = args.size;
    let req = RenderRequest {
        scene: args.scene.clone(),
        width,
        height,
        frames: args.frames,
        strategy: args.strategy,
        readback,
        device: args.common.device().clone(),
        partials: args.partials.clone(),
    };
    let bar = kit::progress::bar(args.frames as u64, "frames");
    let mut last: Option<FrameStats> = None;
    let result = distributed::render(comm, &req, |stats| {
        // Each frame is reported when the next one is done; the last once its image is written.
        if let Some(previous) = last.replace(stats) {
            kit::emit(&previous, &[]);
        }
        bar.inc(1);
    });
    bar.finish_and_clear();
    let frame = match result {
        Ok(frame) => frame,
        // Every rank has this one.
        Err(e @ CompositeError::Rank { .. }) => return Err(e.into()),
        Err(e) if comm.size() > 1 => abort_job(comm, e),
        Err(e) => return Err(e.into()),
    };
    if let (Some(frame), Some(stats)) = (frame, last) {
        frame.save(&args.out, None, [0, 0, 0, 0])?;
        let mut outs: Vec<&Path> = vec![&args.out];
        outs.extend(args.partials.as_deref());
        kit::emit(&Rendered { stats, out: args.out.clone() }, &outs);
    }
    Ok(())
}
