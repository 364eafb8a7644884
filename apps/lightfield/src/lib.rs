//! Multidimensional dictionary-ensemble light-field codec: train, encode on the GPU, decode.

/// Embedded SPIR-V of `shaders/lightfield/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
