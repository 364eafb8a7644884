//! The records `composite` prints (docs/cli.md): each is one line of text, or its fields in
//! the JSON envelope under `--json`.

use std::fmt;
use std::path::PathBuf;

use composite::distributed::FrameStats;
use composite::schedule::Strategy;
use composite::types::Op;
use serde::Serialize;

/// `composite encode`.
#[derive(Serialize)]
pub struct EncodeReport {
    /// Named in the envelope's `out`.
    #[serde(skip)]
    pub out: PathBuf,
    pub width: u32,
    pub height: u32,
    pub bytes: usize,
    pub raw_bytes: usize,
    pub active_pixels: usize,
}

impl fmt::Display for EncodeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "wrote {} ({} bytes, {} active pixels)", self.out.display(), self.bytes, self.active_pixels)
    }
}

/// `composite decode`.
#[derive(Serialize)]
pub struct DecodeReport {
    #[serde(skip)]
    pub out: PathBuf,
    pub width: u32,
    pub height: u32,
    pub active_pixels: usize,
}

impl fmt::Display for DecodeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "wrote {} ({}x{})", self.out.display(), self.width, self.height)
    }
}

/// `composite blend`.
#[derive(Serialize)]
pub struct BlendReport {
    #[serde(skip)]
    pub out: PathBuf,
    pub inputs: usize,
    pub op: Op,
    pub width: u32,
    pub height: u32,
    pub active_pixels: usize,
}

impl fmt::Display for BlendReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "wrote {} ({} inputs, {})", self.out.display(), self.inputs, self.op.name())
    }
}

/// `composite render`'s last frame, once its image is written.
#[derive(Serialize)]
pub struct Rendered {
    #[serde(flatten)]
    pub stats: FrameStats,
    #[serde(skip)]
    pub out: PathBuf,
}

impl fmt::Display for Rendered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}\nwrote {}", self.stats, self.out.display())
    }
}

/// `composite merge`, on rank 0.
#[derive(Serialize)]
pub struct Merged {
    #[serde(skip)]
    pub out: PathBuf,
    pub ranks: usize,
    pub op: Op,
    pub strategy: Strategy,
    pub width: u32,
    pub height: u32,
    pub encode_ms: f64,
    pub exchange_ms: f64,
    pub composite_ms: f64,
    pub gather_ms: f64,
    pub bytes_sent: u64,
}

impl fmt::Display for Merged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "wrote {} ({} ranks, {}, {}x{}, {} bytes sent)",
            self.out.display(),
            self.ranks,
            self.op.name(),
            self.width,
            self.height,
            self.bytes_sent
        )
    }
}
