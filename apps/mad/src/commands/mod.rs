//! The subcommands of `mad`, one file each: their flags, then parse -> library call ->
//! report. What several of them share lives here: the MAD pipelines on the chosen backend.

use anyhow::Result;
use kit::CommonArgs;
use mad::gpu::GpuMad;

pub mod batch;
pub mod bench;
pub mod correlate;
pub mod demo;
pub mod score;

/// The MAD pipelines on the `--device` GPU, or `None` on the CPU backend.
fn open_gpu(common: &CommonArgs) -> Result<Option<GpuMad>> {
    Ok(match common.context()? {
        Some(ctx) => Some(GpuMad::new(&ctx)?),
        None => None,
    })
}
