//! The Most Apparent Distortion image quality metric (Larson & Chandler 2010), exact, on the GPU.

/// Embedded SPIR-V of `shaders/mad/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
