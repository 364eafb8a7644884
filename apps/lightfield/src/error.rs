//! The codec's error type: bad input files, parameters the input rules out, encodes that
//! miss their target, and engine failures. Every variant carries what went wrong as values;
//! the message is made from them.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LfError {
    /// A file that does not hold what it should; the message says why.
    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },
    /// Bytes that are not a valid `.lfc` or `.lfd`: a magic, a checksum, a size.
    #[error("corrupt {what}: {message}")]
    Corrupt { what: &'static str, message: String },
    /// A file or size refused at the edges (not a regular file, over the memory budget, a
    /// write that failed).
    #[error(transparent)]
    Kit(#[from] kit::KitError),
    #[error(transparent)]
    Engine(#[from] engine::EngineError),

    #[error("--epsilon {epsilon}: expected a value in [{min}, 1]")]
    Epsilon { epsilon: f32, min: f32 },
    #[error("--sparsity {sparsity}: expected 1..={samples} (the patch's sample count)")]
    Sparsity { sparsity: usize, samples: usize },
    #[error("--dictionaries {k}: expected 1..={max}")]
    Dictionaries { k: usize, max: usize },
    #[error("patch {text:?}: expected HxWxUxV or HxWx3xUxV, e.g. 5x5x8x8")]
    PatchSyntax { text: String },
    #[error("patch {shape}: every size must be in 1..={max}")]
    PatchSize { shape: String, max: usize },
    /// A fractional viewpoint outside the captured views (`render`, `view`).
    #[error("--view {},{} is outside the captured views (rows 0 to {}, columns 0 to {})", position[0], position[1], last[0], last[1])]
    Viewpoint { position: [f32; 2], last: [f32; 2] },
    #[error("--focus {focus} is not within +-{max}")]
    Focus { focus: f32, max: f32 },
    #[error("--aperture {aperture} is not within 1 to {max}")]
    Aperture { aperture: f32, max: f32 },
    #[error("--size {width}x{height} is not within 1 to {max}")]
    OutputSize { width: u32, height: u32, max: u32 },
    /// A captured view that is not one of the grid's (`decode --view`).
    #[error("--view {},{} is not one of the {}x{} views (rows 0 to {}, columns 0 to {})", view.0, view.1, views.0, views.1, views.0 - 1, views.1 - 1)]
    NoSuchView { view: (usize, usize), views: (usize, usize) },

    #[error("light field {}x{} views of {}x{} pixels is empty", size[0], size[1], size[3], size[2])]
    EmptyLightField { size: [usize; 4] },
    #[error("light field of {}x{} views of {}x{} pixels needs {needed} samples, got {samples}", size[0], size[1], size[3], size[2])]
    SampleCount { size: [usize; 4], needed: usize, samples: usize },
    /// A sample that is NaN or infinite; `index` counts from the light field's first sample.
    #[error("{what}: sample {index} is {value}; every sample must be finite")]
    NotFinite { what: String, index: usize, value: f32 },
    #[error("{what}: sample {index} is {value}; float light fields must hold values in [0, 1]")]
    OutOfRange { what: String, index: usize, value: f32 },
    #[error("no training light fields")]
    NoTrainingData,

    #[error("{k} dictionaries; expected 1..={max}")]
    EnsembleSize { k: usize, max: usize },
    #[error("dictionary matrices have the wrong length")]
    DictionaryLength,
    #[error("dictionary holds NaN or infinite values")]
    DictionaryNotFinite,
    #[error("dictionary {dictionary}, mode {mode}: matrix is not orthonormal (|Q^T Q - I| = {error:.2e})")]
    NotOrthonormal { dictionary: usize, mode: usize, error: f64 },
    #[error("the decoded light field holds a NaN or an infinity")]
    DecodedNotFinite,
    /// A GPU codec given codes of another ensemble than the one it holds.
    #[error("GPU decoder was built for another ensemble")]
    OtherEnsemble,

    /// `decode --out` given an image name (it writes a `.npy`; `--views` writes images).
    #[error("{}: --out writes a .npy array (the only format it takes); for one image per view use --views DIR", path.display())]
    ArrayOutputIsImage { path: PathBuf },
    /// `encode --bpp` below what the coarsest encode takes.
    #[error(
        "--bpp {bpp}: the coarsest encode (--epsilon 1) takes {coarsest:.4} bits per pixel \
         (the dictionaries alone take {dictionaries:.4}); give a larger --bpp or a smaller ensemble"
    )]
    RateUnreachable { bpp: f64, coarsest: f64, dictionaries: f64 },
    /// `encode --strict` with patches that missed epsilon at the sparsity cap.
    #[error(
        "{over} of {patches} patches did not reach --epsilon {epsilon} within the sparsity cap T = {sparsity} \
         (worst RMSE bound {worst:.5}); nothing written (raise --sparsity or --epsilon, or drop --strict)"
    )]
    OverEpsilon { over: usize, patches: usize, epsilon: f32, sparsity: usize, worst: f64 },

    /// What the writer refuses because the reader would (sizes, steps, totals).
    #[error("quantisation step {step} is that of no .lfc version for this epsilon")]
    Step { step: f32 },
    #[error("light-field size {size:?} beyond 32 bits")]
    SizeBeyond32Bits { size: [usize; 4] },
    #[error("{sections} sections for {patches} patches")]
    SectionCount { sections: usize, patches: u64 },
    #[error("sections hold {held} of {coefficients} coefficients")]
    SectionCoefficients { held: u64, coefficients: u64 },
    #[error("payload of {bytes} bytes is beyond the {max}-byte limit")]
    PayloadLimit { bytes: u64, max: u64 },
    #[error("zstd: {0}")]
    Zstd(std::io::Error),

    /// What came back from a kernel that it cannot have written.
    #[error("GPU encoder returned {count} coefficients for a patch (cap {sparsity})")]
    EncoderCount { count: usize, sparsity: usize },
    #[error("{pixels} pixels for a {width}x{height} view")]
    FrameBuffer { pixels: usize, width: u32, height: u32 },
    #[error("the .npy reader stopped early")]
    ReaderStopped,
    #[error("{0}")]
    Json(serde_json::Error),
    #[error("JPEG {step}: {error}")]
    Jpeg { step: &'static str, error: image::ImageError },
}

kit::app_error!(LfError);

pub type Result<T, E = LfError> = std::result::Result<T, E>;

impl LfError {
    pub fn file(path: impl Into<PathBuf>, message: impl std::fmt::Display) -> Self {
        LfError::File { path: path.into(), message: message.to_string() }
    }

    pub fn corrupt(what: &'static str, message: impl std::fmt::Display) -> Self {
        LfError::Corrupt { what, message: message.to_string() }
    }
}
