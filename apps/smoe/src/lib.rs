//! Steered Mixture-of-Experts: model format, EM fitting, GPU renderer and viewer.

/// Embedded SPIR-V of `shaders/smoe/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
