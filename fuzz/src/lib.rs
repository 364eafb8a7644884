//! What every fuzz target shares: the readers take paths (they check file type and length
//! before reading), so each input is written to a file first.

use std::path::{Path, PathBuf};

/// Writes `data` to a per-process file named `name` in the temporary folder and returns
/// its path.
pub fn as_file(name: &str, data: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("tessera-fuzz-{}-{name}", std::process::id()));
    std::fs::write(&path, data).expect("write the fuzz input");
    path
}

/// A budget small enough that a reader which skips its checks is caught by the fuzzer's
/// memory limit (-rss_limit_mb) instead of passing.
pub fn small_budget() {
    kit::budget::set(256 << 20);
}

/// Runs `read` on `data` written as `name`; the outcome does not matter, only that the reader
/// returns (a panic or abort is the finding).
pub fn check<T, E>(name: &str, data: &[u8], read: impl FnOnce(&Path) -> Result<T, E>) {
    small_budget();
    let path = as_file(name, data);
    let _ = read(&path);
}
