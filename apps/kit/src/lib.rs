//! The edges every Tessera binary shares, so that all of them behave alike (docs/cli.md):
//!
//! - [`main`]: parses the command line, runs the command, and reports errors in one format
//!   (`<binary>: error: ...`, exit 1; usage errors exit 2, [`Usage`] for those found after
//!   parsing; a JSON object under `--json`);
//!   [`main_subcommands`] for a binary whose work is all in subcommands, which names its
//!   library's error type ([`AppError`]) so that the engine errors it holds keep their kind.
//! - [`cli`]: the flags every command shares (`--backend`, `--device`, `--json`,
//!   `--max-memory`) and value parsers for the rest.
//! - [`output`]: outputs checked before any work starts, format from the extension, written
//!   atomically with the mode the umask gives, all-or-none for several files.
//! - [`input`]: regular files only, bounded reads, text without a byte-order mark.
//! - [`image`]: one image loader (EXIF orientation applied, size checked against the budget)
//!   and one writer (format from the extension).
//! - [`npy`]: `.npy` read with its header checked against the bytes and the budget.
//! - [`budget`]: the memory budget every reader checks before it allocates.
//! - [`progress`]: indicatif bars with an ETA, quiet under `--json` or off a terminal.
//! - [`report`]: the JSON envelope (`command`, `version`, `device`, `backend`, `wall_ms`,
//!   `out`) around each command's typed record.
//! - [`fuzz`]: mutation testing of readers with a counting allocator (tests).
//! - [`heap`]: host allocator settings for binaries that churn large per-frame buffers.
//! - [`photos`]: the demos' sample photos (public domain or CC0), embedded.
//! - [`stats`]: the median and percentiles of repeated timings, wall milliseconds.
//! - [`testing`]: a binary run by its integration tests, with the contract's checks.
//! - [`tuning`]: the per-device tuning file `sweep --tune` writes and the apps read, checked.
//! - `viewer` (feature `viewer`): the window, event loop and screenshot the viewers share.

pub mod budget;
pub mod cli;
pub mod error;
pub mod fuzz;
pub mod heap;
pub mod image;
pub mod input;
pub mod npy;
pub mod output;
pub mod photos;
pub mod progress;
pub mod report;
pub mod rng;
pub mod stats;
pub mod testing;
pub mod tuning;
pub mod units;
#[cfg(feature = "viewer")]
pub mod viewer;

mod run;

pub use cli::{Backend, BenchArgs, CommonArgs};
pub use error::{KitError, Result};
pub use report::emit;
pub use run::{main, main_subcommands, print_error, AppError, Reported, Usage};

/// What kit's macros name; not part of its API.
#[doc(hidden)]
pub mod __private {
    pub use engine::EngineError;
    pub use serde_json;
}
