//! Command-line pieces every binary shares: `--backend`, `--device`, `--json`, progress
//! bars that stay quiet under `--json`, and one-line JSON output.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// Where the work runs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The Vulkan compute path.
    #[default]
    Gpu,
    /// The multithreaded Rust reference (rayon).
    Cpu,
}

/// Flags shared by every subcommand that computes: flatten into a clap struct with
/// `#[command(flatten)] common: engine::cli::CommonArgs`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct CommonArgs {
    /// gpu (Vulkan) or cpu (multithreaded reference)
    #[arg(long, value_enum, default_value_t = Backend::Gpu)]
    pub backend: Backend,
    /// Device index or a substring of its name (default: first discrete GPU, else integrated,
    /// else CPU/lavapipe)
    #[arg(long)]
    pub device: Option<String>,
    /// Print one JSON object per line instead of text; no progress bars
    #[arg(long)]
    pub json: bool,
}

/// A progress bar over `len` steps, hidden under `--json` or when stderr is not a terminal.
pub fn progress(len: u64, message: &str, json: bool) -> ProgressBar {
    if json || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} {elapsed_precise} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(message.to_string());
    bar
}

/// Prints one JSON object on its own line to stdout. When the reader has gone (a closed
/// pipe, as `| head` leaves it) the process ends quietly instead of panicking.
pub fn print_json(value: &serde_json::Value) {
    use std::io::Write;
    let line = serde_json::to_string(value).unwrap_or_else(|_| "{}".into());
    if writeln!(std::io::stdout(), "{line}").is_err() {
        std::process::exit(0);
    }
}

/// Arguments of every binary's `bench` subcommand: `Bench(engine::cli::BenchArgs)`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct BenchArgs {
    /// Tiny sizes only: a smoke test that runs in seconds on lavapipe
    #[arg(long)]
    pub quick: bool,
    /// Device index or a substring of its name
    #[arg(long)]
    pub device: Option<String>,
}
