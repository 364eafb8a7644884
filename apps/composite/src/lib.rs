//! Sort-last compositing with GPU Active Pixel encoding, distributed over MPI.
//!
//! - [`ap`]: the `.ap` format, run walking and the canonical payload writer.
//! - [`spans`]: cutting encoded spans at pixel boundaries and joining them.
//! - [`frame`]: raw colour + depth images, and decoding into them.
//! - [`types`]: the ROI box and the compositing operator, shared by both backends' stages.
//! - [`gpu`] and [`cpu`]: the stages, one file each, with the same names on both sides:
//!   `encode` (ROI and Active Pixel encoding) and `blend` (compositing encoded images).
//! - [`scene`]: OBJ folders and generated point clouds, the camera, the split across ranks.
//! - [`raster`]: the Vulkan rasteriser (impostor spheres, meshes) into colour + depth.
//! - [`schedule`], [`comm`], [`piece`], [`exchange`], [`distributed`]: binary-swap /
//!   radix-k / direct-send over MPI, one round skeleton for images on the host or the GPU.
//! - [`compositor`]: the library: any renderer's colour and depth composited over MPI (the
//!   C ABI in `capi/` wraps it).
//! - [`demo`]: the project demo's compositor part.
//! - [`bench`](mod@bench): the paper's Tables 1 and 2 (`composite bench`); the encoder's
//!   shapes are swept by the shared registry (`sweep --kernel composite.encode`).

pub mod ap;
pub mod bench;
pub mod comm;
pub mod compositor;
pub mod cpu;
pub mod demo;
pub mod distributed;
pub mod error;
pub mod exchange;
pub mod frame;
pub mod gpu;
mod patterns;
pub mod piece;
pub mod raster;
pub mod scene;
pub mod schedule;
pub mod spans;
pub mod timing;
pub mod types;

pub use error::{CompositeError, EncoderLimit, Result};

/// Embedded SPIR-V of `shaders/composite/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
