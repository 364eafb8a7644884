//! The GPU stages, one file each, twins of [`crate::cpu`]'s of the same name.

pub mod em;
pub mod kmeans;
pub mod refine;
pub mod render;

pub use render::{Cull, Frame, Mode, OutFormat, RenderSettings, Renderer};
