//! Multidimensional dictionary-ensemble light-field codec: train, encode on the GPU, decode.
//!
//! A light field (U x V views of H x W RGB pixels) is cut into 5D patches (views x views x
//! rows x columns x colours). An ensemble of K dictionaries, each one orthonormal matrix per
//! patch mode, is trained from example light fields ([`train`]). The encoder projects every
//! patch onto every dictionary with n-mode products, keeps the fewest largest coefficients
//! that bring the patch's RMSE under the threshold (quantisation included) and picks the
//! sparsest dictionary. [`bitstream`] stores the result in a self-contained `.lfc` file; the
//! decoder reconstructs it.
//!
//! Every stage has a GPU side in [`gpu`] and a CPU twin in [`cpu`] under the same name
//! (`encode`, `decode`, `render`, `train`), each pair tested against each other on random
//! inputs at awkward sizes; what both sides share lives beside them:
//! - [`codes`]: the encode's parameters, error budgets and the codes both encoders produce.
//! - [`codec`]: whole light fields through either side (gather, pad, crop, chunk).
//! - [`patch`]: patch shapes, the patch grid of a light field, padding and cropping.
//! - [`lightfield`]: light-field input (`.npy` or a folder of views) and checks.
//! - [`npy_bands`]: `.npy` light fields read in bands while they are encoded.
//! - [`samples`]: a light field's samples, owned or mapped from a float32 `.npy`.
//! - [`layout`]: which file of a folder is which view (HCI, Stanford, row/column names).
//! - [`bytes`]: bounds-checked byte reading, varints and the FNV-1a checksum.
//! - [`dictionary`]: the ensemble, its `.lfd` file, n-mode products on the CPU.
//! - [`select`]: quantisation and the greedy coefficient choice (the reference semantics).
//! - [`linalg`]: small dense SVD (one-sided Jacobi) for training.
//! - [`synth`]: synthetic light fields with real parallax, for tests and benchmarks.
//! - [`random_access`]: one view from only the sections of a `.lfc` that hold it.
//! - [`render`]: the viewpoint (interpolation and refocusing) and the pixels' packing.
//! - [`views`]: views as PNG files, one per view, written all or none.
//! - [`bench`](mod@bench) and [`demo`]: the benchmark set and the demo behind the CLI.

pub mod bench;
pub mod bitstream;
pub mod bytes;
pub mod codec;
pub mod codes;
pub mod cpu;
pub mod demo;
pub mod dictionary;
pub mod entropy;
pub mod error;
pub mod gpu;
pub mod layout;
pub mod lightfield;
pub mod linalg;
pub mod npy_bands;
pub mod patch;
pub mod pools;
pub mod random_access;
pub mod render;
pub mod samples;
pub mod sections;
pub mod select;
pub mod stages;
pub mod synth;
pub mod train;
pub mod views;

pub use error::{LfError, Result};

/// Embedded SPIR-V of `shaders/lightfield/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
