//! Steered Mixture-of-Experts: model format, EM fitting, GPU renderer and viewer.
//!
//! The work is done in stages, each with a GPU kernel set in [`gpu`] and its f64 twin of
//! the same name in [`cpu`] (tests compare the twins stage by stage):
//! - `render`: the renderer (GPU: exact per-tile culling or the paper's relevance window;
//!   CPU: every kernel at every pixel, the oracle and `--backend cpu`);
//! - `kmeans`: the k-means++ / Lloyd start of the fitter;
//! - `em`: the EM iterations (GPU: dense, and `em::culled` for images over the renderer's
//!   tile lists);
//! - `refine`: the loss and its gradient, and Adam, after EM.
//!
//! Around them:
//! - [`model`]: the model, its JSON and binary formats, validation.
//! - [`codec`]: the compact, entropy-coded model format `.smc`, and fitting it to a byte budget.
//! - [`fit`]: the fitter's start and the fit at one kernel count on either backend; [`em`]:
//!   the regularisation, report and raw records both backends' EM share.
//! - [`refine`]: the refinement's parameters and loop, shared by both backends.
//! - [`memory`]: what `smoe fit` will allocate, estimated before it does.
//! - [`target`]: the search for the smallest K that reaches a PSNR (`smoe fit --psnr`).
//! - [`data`]: inputs (images, light fields) as joint samples; generated sample images.

pub mod codec;
pub mod cpu;
pub mod data;
pub mod em;
pub mod error;
pub mod files;
pub mod fit;
pub mod gpu;
pub mod memory;
pub mod model;
pub mod params;
pub mod refine;
pub mod smc_fit;
pub mod target;

/// Embedded SPIR-V of `shaders/smoe/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
