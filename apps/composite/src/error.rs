//! The compositor's error type: bad `.ap` files, mismatched images, scene problems, shapes
//! the GPU encoder cannot run, and whatever the engine or MPI reported.

use std::path::PathBuf;

/// What went wrong in the compositor library.
#[derive(Debug, thiserror::Error)]
pub enum CompositeError {
    #[error("{path}: not an Active Pixel file: {message}")]
    BadFile { path: PathBuf, message: String },
    #[error("corrupt Active Pixel payload: {0}")]
    Corrupt(String),
    /// The GPU encoder reported a payload longer than any of its pixels can have: the
    /// encoder's shape is wrong on this device.
    #[error("corrupt Active Pixel payload: GPU encoder reported {words} words for {pixels} pixels")]
    PayloadSize { words: usize, pixels: usize },
    /// Two encodings of the same frame that must be equal are not (`what` names them).
    #[error("{what} differ")]
    EncodingsDiffer { what: String },
    #[error("image sizes differ: inputs have {first} and {other} pixels")]
    PixelCounts { first: usize, other: usize },
    #[error("image sizes differ: a span of {got} pixels for {want}")]
    SpanPixels { got: usize, want: usize },
    #[error("image sizes differ: payload covers {pixels} pixels, header says {width}x{height}")]
    HeaderSize { pixels: usize, width: u32, height: u32 },
    #[error("image sizes differ: {} is {width}x{height} but {} has shape {shape:?}, expected ({height}, {width})", color.display(), depth.display())]
    DepthShape { color: PathBuf, depth: PathBuf, width: usize, height: usize, shape: Vec<usize> },
    #[error("image size {width}x{height} is empty or too large")]
    ImageSize { width: u32, height: u32 },
    #[error("{}: depth must be float32 or float64, not {dtype}", path.display())]
    DepthType { path: PathBuf, dtype: &'static str },
    #[error("{}: pixel {pixel} has depth NaN", path.display())]
    NanDepth { path: PathBuf, pixel: usize },
    /// A raw partial image (`--partials` layout) of the wrong length.
    #[error("{} holds {len} bytes; a {width}x{height} image needs {need}", path.display())]
    RawLength { path: PathBuf, len: usize, width: u32, height: u32, need: usize },
    #[error("{} is raw: give --size WxH", path.display())]
    RawNeedsSize { path: PathBuf },
    /// An argument a caller of the library gave that it refuses.
    #[error("invalid input: {0}")]
    Invalid(String),
    /// The GPU encoder cannot run on this device, or not with this shape or frame;
    /// `--backend cpu` always can.
    #[error(transparent)]
    GpuEncoder(#[from] EncoderLimit),
    #[error("scene: {0}")]
    Scene(String),
    #[error("MPI: {0}")]
    Mpi(String),
    /// A rank of a job of several failed, and every rank knows it with the same message
    /// (see `distributed::agree`).
    #[error("rank {rank}: {message}")]
    Rank { rank: usize, message: String },
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    #[error(transparent)]
    Kit(#[from] kit::KitError),
}

/// Why the GPU encoder cannot take a frame or a shape here.
#[derive(Debug, thiserror::Error)]
pub enum EncoderLimit {
    #[error(
        "the GPU encoder needs subgroups of 8, 16 or 32 lanes that divide a workgroup of at most {max_subgroups} subgroups (subgroup {subgroup}, sizes that can be required {sizes:?}, workgroup {workgroup}); the CPU encoder (--backend cpu) works everywhere"
    )]
    Subgroups { subgroup: u32, sizes: Option<(u32, u32)>, workgroup: u32, max_subgroups: u32 },
    #[error("{per_lane} pixels per lane in batches of {batch}: a multiple of 32 in whole batches")]
    PerLane { per_lane: u32, batch: u32 },
    #[error("workgroups of {0} are too large here")]
    Workgroup(u32),
    #[error("{len} pixels at pixel {start} do not fit the colour/depth buffers ({color} / {depth} pixels)")]
    Buffers { start: usize, len: usize, color: usize, depth: usize },
    #[error("a row of {width} pixels is more than the {piece} one GPU encoding binds here; --backend cpu encodes it")]
    RowTooWide { width: u32, piece: usize },
    /// Every built-in shape failed to build or its self-check, each for its reason.
    #[error("no GPU encoder configuration works here: {0}")]
    NoShape(String),
}

impl CompositeError {
    /// Whether the caller's arguments or images are at fault (a C or Python caller's
    /// argument error), rather than the device, MPI or the library.
    pub fn is_argument(&self) -> bool {
        matches!(
            self,
            CompositeError::Invalid(_)
                | CompositeError::PixelCounts { .. }
                | CompositeError::SpanPixels { .. }
                | CompositeError::HeaderSize { .. }
                | CompositeError::DepthShape { .. }
                | CompositeError::ImageSize { .. }
                | CompositeError::DepthType { .. }
                | CompositeError::NanDepth { .. }
                | CompositeError::RawLength { .. }
                | CompositeError::RawNeedsSize { .. }
        )
    }
}

kit::app_error!(CompositeError);

pub type Result<T, E = CompositeError> = std::result::Result<T, E>;
