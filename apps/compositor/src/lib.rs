//! Sort-last compositing with GPU Active Pixel encoding, distributed over MPI.
//!
//! - [`ap`]: the `.ap` format, run walking and the canonical payload writer.
//! - [`frame`]: raw colour + depth images.
//! - [`codec`]: CPU encoders (serial reference, multithreaded) and the decoder.
//! - [`ops`]: compositing on encoded images (z-buffer, premultiplied over), split and join.

pub mod ap;
pub mod codec;
pub mod error;
pub mod frame;
pub mod ops;

pub use error::{CompositorError, Result};

/// Embedded SPIR-V of `shaders/compositor/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
