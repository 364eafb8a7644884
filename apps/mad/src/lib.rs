//! The Most Apparent Distortion image quality metric (Larson & Chandler 2010), exactly as
//! the authors' 2011 release defines it, with an f64 CPU reference ([`cpu`]) and a batched
//! Vulkan path ([`gpu`]).
//!
//! - [`constants`]: every constant, with its source in the release.
//! - [`filters`], [`grid`]: the CSF and log-Gabor filters per FFT bin, the block layout.
//! - [`input`]: image files to gray images; [`pairs`]: the batch CSV; [`maps`]: map output.
//! - [`batch`]: `mad batch` over one or several GPUs or the CPU; [`dataset`]: pairs of an
//!   IQA data set's folders by name; [`results`]: the resumable results file; [`report`]:
//!   the records every subcommand prints.
//! - [`correlate`]: SROCC, KROCC and PLCC after the 4-parameter logistic, against MOS/DMOS.
//! - [`tiled`]: large pairs within the memory budget, in tiles with a wrapped-around halo.
//! - [`synth`]: deterministic sample images and distortions (demo, bench, tests).
//! - [`bench`], [`demo`]: the `mad bench` and `mad demo` subcommands.

pub mod batch;
pub mod bench;
pub mod constants;
pub mod correlate;
pub mod cpu;
pub mod dataset;
pub mod demo;
pub mod filters;
pub mod gpu;
pub mod grid;
pub mod input;
pub mod maps;
pub mod pairs;
pub mod report;
pub mod results;
pub mod seams;
pub mod synth;
pub mod tiled;

pub use input::GrayImage;

/// Embedded SPIR-V of `shaders/mad/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}

/// What can go wrong while scoring.
#[derive(Debug, thiserror::Error)]
pub enum MadError {
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    /// A file that cannot be read or written, or a size over the memory budget.
    #[error(transparent)]
    Kit(#[from] kit::KitError),
    #[error("size mismatch: reference is {}x{}, distorted is {}x{}", reference.0, reference.1, distorted.0, distorted.1)]
    SizeMismatch { reference: (usize, usize), distorted: (usize, usize) },
    #[error("image is {width}x{height}; MAD needs at least {min}x{min} (its maps are cropped by 17 pixels per side)")]
    TooSmall { width: usize, height: usize, min: usize },
    #[error("{path}: {message}")]
    Pairs { path: String, message: String },
    /// Scores that cannot be compared with subjective ones (`mad correlate`).
    #[error("{0}")]
    Correlate(String),
    #[error("{failed} of {total} pairs failed")]
    PairsFailed { failed: usize, total: usize },
    #[error("splitting a pair's stages needs two devices or more, one per stage; {0} given")]
    SplitDevices(usize),
    #[error("a batch worker panicked")]
    WorkerPanicked,
    /// Samples given in memory that are not an image ([`GrayImage::from_float`]).
    #[error("invalid image: {0}")]
    InvalidImage(String),
    #[error("the GPU cannot score this tile plan: {0}")]
    TilePlan(String),
}

kit::app_error!(MadError);

/// The scores of one pair.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Scores {
    pub mad: f64,
    /// d_detect (the release's `index.HI`).
    pub detection: f64,
    /// d_appear (the release's `index.LO`).
    pub appearance: f64,
    pub alpha: f64,
}

impl Scores {
    /// Blends d_detect and d_appear into the final score.
    pub fn combine(detection: f64, appearance: f64) -> Scores {
        let (mad, alpha) = constants::combine(detection, appearance);
        Scores { mad, detection, appearance, alpha }
    }
}

/// The per-pixel maps of one pair, row-major.
#[derive(Clone, Debug)]
pub struct Maps {
    pub width: usize,
    pub height: usize,
    /// `msk .* lmse` of the detection stage (before the crop).
    pub detection: Vec<f32>,
    /// The weighted statistics differences of the appearance stage.
    pub appearance: Vec<f32>,
    /// `detection^alpha * appearance^(1-alpha)` per pixel, with the pair's alpha.
    pub combined: Vec<f32>,
}

impl Maps {
    pub fn new(width: usize, height: usize, detection: Vec<f64>, appearance: Vec<f64>, alpha: f64) -> Maps {
        let combined =
            detection.iter().zip(&appearance).map(|(&d, &a)| (d.powf(alpha) * a.powf(1.0 - alpha)) as f32).collect();
        let to32 = |v: Vec<f64>| v.into_iter().map(|x| x as f32).collect();
        Maps { width, height, detection: to32(detection), appearance: to32(appearance), combined }
    }
}
