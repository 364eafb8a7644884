//! `composite merge`: every rank's partial image from a folder, composited with the library
//! ([`composite::compositor`]) on MPI's world (one rank without `mpirun`); rank 0 writes it.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use composite::comm::Comm;
use composite::compositor::{Backend, Color, ColorFormat, ColorMut, Compositor, DepthFormat};
use composite::distributed::{agree, read_partial};
use composite::frame::Frame;
use composite::schedule::Strategy;
use composite::types::Op;
use composite::CompositeError;
use kit::image::IMAGE_EXTENSIONS;
use kit::CommonArgs;

use super::{end_failed_job, world};
use crate::records::Merged;

#[derive(Args)]
pub struct MergeArgs {
    /// Folder of rank{r}.rgba + rank{r}.depth (with --size) or rank{r}.png + rank{r}.npy
    #[arg(long, value_name = "DIR")]
    inputs: PathBuf,
    /// Image to write on rank 0 (.png, .jpg, .tif, .bmp or .webp)
    #[arg(long)]
    out: PathBuf,
    /// Size WxH of raw .rgba/.depth partials (each side 1-16384)
    #[arg(long, value_name = "WxH", value_parser = kit::cli::parse_size)]
    size: Option<(u32, u32)>,
    /// zbuffer: nearest depth wins (ties to the lower rank); over: premultiplied alpha, rank 0 in front
    #[arg(long, value_enum, default_value_t = Op::ZBuffer)]
    op: Op,
    /// How the ranks exchange spans (default: by rank count and image size)
    #[arg(long, value_enum)]
    strategy: Option<Strategy>,
    #[command(flatten)]
    common: CommonArgs,
}

pub fn run(args: MergeArgs) -> Result<()> {
    let comm = world()?;
    let (rank, size) = (comm.rank(), comm.size());
    // Every rank checks and reads before any exchange, and they agree on the outcome: a
    // missing or short file stops every rank with its rank's message.
    let prepared = (|| -> Result<Frame, CompositeError> {
        if rank == 0 {
            kit::output::check_file(&args.out, IMAGE_EXTENSIONS, &[])?;
        }
        read_partial(&args.inputs, rank, args.size)
    })();
    let frame = match agree(comm.as_ref(), prepared) {
        Ok(frame) => frame,
        Err(e @ CompositeError::Rank { .. }) => return end_failed_job(comm, e.into()),
        Err(e) => return Err(e.into()),
    };
    let (w, h) = (frame.width, frame.height);
    if let Err(e) = same_size(comm.as_ref(), w, h) {
        return end_failed_job(comm, e.into());
    }
    let backend = match args.common.backend {
        kit::Backend::Gpu => Backend::Gpu,
        kit::Backend::Cpu => Backend::Cpu,
    };
    let made = Compositor::on_device(
        comm,
        (w, h),
        ColorFormat::Rgba8,
        DepthFormat::F32,
        args.op,
        backend,
        args.common.device(),
    );
    let mut compositor = made?;
    if let Some(device) = compositor.device() {
        kit::report::set_device(&device);
    }
    compositor.set_strategy(args.strategy);
    let bytes: Vec<u8> = frame.color.iter().flat_map(|c| c.to_le_bytes()).collect();
    let n = frame.pixels();
    let (mut out, mut depth) = if rank == 0 { (vec![0u8; 4 * n], vec![0f32; n]) } else { (Vec::new(), Vec::new()) };
    let outs = (rank == 0).then(|| (ColorMut::Rgba8(&mut out), &mut depth[..]));
    let (out_color, out_depth) = match outs {
        Some((c, d)) => (Some(c), Some(d)),
        None => (None, None),
    };
    compositor.composite_into(Color::Rgba8(&bytes), Some(&frame.depth), None, out_color, out_depth)?;
    if rank == 0 {
        let color = out.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        Frame { width: w, height: h, color, depth }.save(&args.out, None, [0, 0, 0, 0])?;
        let t = compositor.last();
        let report = Merged {
            out: args.out.clone(),
            ranks: size,
            op: args.op,
            strategy: compositor.strategy(),
            width: w,
            height: h,
            encode_ms: t.encode_ms,
            exchange_ms: t.exchange_ms,
            composite_ms: t.composite_ms,
            gather_ms: t.gather_ms,
            bytes_sent: t.bytes_sent,
        };
        kit::emit(&report, &[&args.out]);
    }
    Ok(())
}

/// Every rank's image has rank 0's size: where one has not, every rank fails with rank 0's
/// [`CompositeError::Rank`] naming it (rank 0 alone sees every size).
fn same_size(comm: &dyn Comm, w: u32, h: u32) -> Result<(), CompositeError> {
    let all = comm.gather(&[w as f64, h as f64]);
    let first = comm.first_error(all.and_then(|all| {
        let (r, v) = all.iter().enumerate().find(|(_, v)| **v != all[0])?;
        Some(format!("image sizes differ: rank {r}'s image is {}x{}, rank 0's {}x{}", v[0], v[1], all[0][0], all[0][1]))
    }));
    match first {
        Some((rank, message)) => Err(CompositeError::Rank { rank, message }),
        None => Ok(()),
    }
}
