//! Sort-last compositing with GPU Active Pixel encoding, distributed over MPI.
//!
//! - [`ap`]: the `.ap` format, run walking and the canonical payload writer.
//! - [`frame`]: raw colour + depth images.
//! - [`codec`]: CPU encoders (serial reference, multithreaded) and the decoder.
//! - [`ops`]: compositing on encoded images (z-buffer, premultiplied over), split and join.
//! - [`scene`]: OBJ folders and generated point clouds, the camera, the split across ranks.
//! - [`raster`]: the Vulkan rasteriser (impostor spheres, meshes) into colour + depth.
//! - [`gpu_encode`]: ROI detection and Algorithm 1 on the GPU.
//! - [`gpu_blend`]: compositing of encoded images on the GPU.
//! - [`schedule`], [`comm`], [`distributed`]: binary-swap / radix-k / direct-send over MPI.
//! - [`demo`]: the project demo's compositor part.
//! - [`bench`]: the paper's Tables 1 and 2 (`composite bench`).

pub mod ap;
pub mod bench;
pub mod codec;
pub mod comm;
pub mod demo;
pub mod distributed;
pub mod error;
pub mod frame;
pub mod gpu_blend;
pub mod gpu_encode;
pub mod ops;
mod patterns;
pub mod raster;
pub mod scene;
pub mod schedule;
pub mod sweep;
pub mod timing;

pub use error::{CompositorError, Result};

/// Embedded SPIR-V of `shaders/compositor/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
