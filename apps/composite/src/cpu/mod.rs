//! The CPU stages, twins of the GPU stages of the same name in [`crate::gpu`]: the
//! references the GPU results are compared with byte for byte, and the `--backend cpu`
//! path.
//!
//! - [`encode`]: region of interest and Active Pixel encoding (serial, multithreaded, of a
//!   readback box);
//! - [`blend`]: compositing of encoded images without decoding them, and of raw spans.

pub mod blend;
pub mod encode;
