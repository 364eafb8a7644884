//! The subcommands of `composite`, one file each (arguments, then parse -> library call ->
//! report), and what several of them share.

use anyhow::Result;
use clap::Args;
use composite::comm::{Comm, Mpi, Single};

pub mod bench;
pub mod blend;
pub mod decode;
pub mod demo;
pub mod encode;
pub mod merge;
pub mod render;

/// The shared flags of a command that runs on the CPU only (no --backend, no --device).
#[derive(Args)]
pub struct HostArgs {
    /// Print one JSON object per line (docs/cli.md) instead of text
    #[arg(long)]
    json: bool,
    /// Memory budget for reading inputs, such as 512M or 8G (default: half of physical memory)
    #[arg(long, value_name = "SIZE", value_parser = kit::budget::parse_size)]
    max_memory: Option<u64>,
}

/// MPI's world under `mpirun`, else one rank.
fn world() -> Result<Box<dyn Comm>> {
    Ok(if Mpi::launched() { Box::new(Mpi::init()?) } else { Box::new(Single) })
}

/// Ends a job of several ranks that all know one of them failed
/// ([`composite::distributed::agree`]): rank 0 prints the error, the others stay quiet, and
/// no rank leaves before it has printed, so the message is the same on every run (when every
/// rank printed, mpirun's teardown at the first exit decided which messages got out, and
/// their bytes could interleave). Every rank then leaves MPI and fails with the same status.
fn end_failed_job(comm: Box<dyn Comm>, error: anyhow::Error) -> Result<()> {
    if comm.rank() == 0 {
        kit::print_error(&error);
    }
    comm.barrier();
    drop(comm);
    Err(kit::Reported.into())
}
