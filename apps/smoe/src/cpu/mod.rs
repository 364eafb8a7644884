//! The f64 CPU stages (rayon), one file each, twins of [`crate::gpu`]'s of the same name.

pub mod em;
pub mod kmeans;
pub mod refine;
pub mod render;
