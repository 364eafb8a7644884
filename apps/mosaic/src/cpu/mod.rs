//! The CPU twins of [`crate::gpu`]'s stages, under the same names: references the GPU is
//! checked against, and the `--backend cpu` paths.

pub mod auction;
pub mod distance;
pub mod hungarian;
pub mod render;
pub mod softassign;
