//! The GPU stages, one file per stage, each with its CPU twin of the same name in
//! [`crate::cpu`] and a test comparing the two on random frames at sizes that are no
//! multiple of a workgroup:
//!
//! - [`encode`]: region of interest and Active Pixel encoding (`ap_count`, `ap_scatter`);
//! - [`blend`]: compositing of encoded images into a raw frame (`ap_blend`), and of encoded
//!   spans into a raw frame's span in place (`ap_zmerge`).

pub mod blend;
pub mod encode;
