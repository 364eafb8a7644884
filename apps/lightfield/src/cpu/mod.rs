//! The CPU twins of [`crate::gpu`]'s stages, under the same names: the references the GPU
//! is tested against, the `--backend cpu` paths and the benchmarks' baselines.
//!
//! - [`encode`]: patches to codes (Algorithm 1 against every dictionary).
//! - [`decode`]: codes to patches (or to one view of them).
//! - [`render`]: a viewpoint of a decoded light field.
//! - [`train`]: the training sums per cluster (Gram and cross-product matrices).

pub mod decode;
pub mod encode;
pub mod render;
pub mod train;
