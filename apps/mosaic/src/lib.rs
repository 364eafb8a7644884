//! Photomosaics without repeated tiles: greedy, annealing, SoftAssign on the GPU, exact.

/// Embedded SPIR-V of `shaders/mosaic/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
