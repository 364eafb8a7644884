//! Progress bars with an ETA driven by real progress, for every step that can take over a
//! second. Quiet under `--json` (set once by [`crate::main`]) and when stderr is not a
//! terminal, so pipes and logs stay clean.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

pub use indicatif::ProgressBar;
use indicatif::ProgressStyle;

static QUIET: AtomicBool = AtomicBool::new(false);

/// Hides every bar made after this call (the command runs with `--json`).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

fn hidden() -> bool {
    QUIET.load(Ordering::Relaxed) || !std::io::stderr().is_terminal()
}

/// A bar over `len` steps: `message [=====>    ] 3/10 00:00:04 eta 6s`.
pub fn bar(len: u64, message: &str) -> ProgressBar {
    if hidden() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>12} [{bar:40}] {pos}/{len} {elapsed_precise} eta {eta} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(message.to_string());
    bar
}

/// A spinner for a step whose length is not known ahead (probes, one long kernel).
pub fn spinner(message: &str) -> ProgressBar {
    if hidden() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {prefix} {elapsed_precise} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_prefix(message.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}
