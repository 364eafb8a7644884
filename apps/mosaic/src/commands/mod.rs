//! The command line of `mosaic`: its arguments, the records it prints, and one file per
//! subcommand (parse -> library call -> report).

use std::path::Path;

use anyhow::{bail, Result};

pub mod args;
pub mod bench;
pub mod build;
pub mod demo;
pub mod distance;
pub mod index;
pub mod report;
pub mod solve;

/// A warning on stderr, as every Tessera binary prints them.
pub fn warn(message: &str) {
    eprintln!("mosaic: warning: {message}");
}

/// Refuses an output that would overwrite one of the tiles.
pub fn check_not_tile(out: &Path, tiles: &Path) -> Result<()> {
    if mosaic::index::is_tile(tiles, out) {
        bail!("{}: is one of the tiles in {}; refusing to overwrite it", out.display(), tiles.display());
    }
    Ok(())
}
