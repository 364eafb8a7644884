//! Steered Mixture-of-Experts: model format, EM fitting, GPU renderer and viewer.
//!
//! - [`model`]: the model, its JSON and binary formats, validation.
//! - [`refine`]: Adam on the rendered image's error after EM (GPU backward pass, f64 twin).
//! - [`reference`]: the f64 CPU renderer over all kernels (the oracle, `--backend cpu`).
//! - [`gpu`]: the GPU renderer with exact per-tile culling or the paper's relevance window.
//! - [`fit`]: the EM fitter (GPU E- and M-step reductions) and its CPU reference.
//! - [`em_culled`]: the EM of images over the renderer's tile culling (memory and time
//!   O(samples x kernels per tile)).
//! - [`kmeans`]: the k-means++ / Lloyd initialisation of the fitter (CPU).
//! - [`gpu_kmeans`]: its GPU twin, the start of `--backend gpu` fits.
//! - [`memory`]: what `smoe fit` will allocate, estimated before it does.
//! - [`target`]: the search for the smallest K that reaches a PSNR (`smoe fit --psnr`).
//! - [`data`]: inputs (images, light fields) as joint samples; generated sample images.
//! - [`bench`]: the Table 4 and fitting benchmarks.
//! - [`viewer`]: the interactive window (winit + engine::present).

pub mod data;
pub mod em_culled;
pub mod fit;
pub mod gpu;
pub mod gpu_kmeans;
pub mod kmeans;
pub mod memory;
pub mod model;
pub mod reference;
pub mod refine;
pub mod target;

/// Embedded SPIR-V of `shaders/smoe/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
