//! The GPU stages, one file each; [`crate::cpu`] holds each one's CPU twin under the same
//! name, and each stage's tests compare the two on random inputs at awkward sizes.
//!
//! - [`distance`]: D from patch and tile features (Eq. 1).
//! - [`softassign`]: SoftAssign's Sinkhorn iterations (its atomic kernel in a submodule).
//! - [`auction`]: the exact solver's forward/reverse auction.
//! - [`hungarian`]: the exact solver's Hungarian method (square matrices of few levels).
//! - [`render`]: the mosaic image from the assigned thumbnails.
//!
//! [`upload`] brings D to the device for the exact solvers, converted on the way.

pub mod auction;
pub mod distance;
pub mod hungarian;
pub mod render;
pub mod softassign;
pub mod upload;
