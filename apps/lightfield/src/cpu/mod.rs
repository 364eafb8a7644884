//! The CPU twins of [`crate::gpu`]'s stages, under the same names: the references the GPU
//! is tested against, the `--backend cpu` paths and the benchmarks' baselines.
//!
//! - [`decode`]: synthesis of patches (or one view of them) from their codes.
//! - [`train`]: the training sums per cluster (Gram and cross-product matrices).

pub mod decode;
pub mod train;
