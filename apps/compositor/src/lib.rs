//! Sort-last compositing with GPU Active Pixel encoding, distributed over MPI.

/// Embedded SPIR-V of `shaders/compositor/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
