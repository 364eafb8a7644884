//! Photomosaics without repeated tiles: greedy, annealing, SoftAssign on the GPU, exact.
//!
//! - [`matrix`]: the distance matrix D, its checks, assignment validity and cost.
//! - [`features`]: u x v mean-RGB features; [`colour`]: CIELAB and CIEDE2000 (`--metric`).
//! - [`gpu`] and [`cpu`]: the stages that run on either, one file each under the same name
//!   on both sides (distance, softassign, auction, hungarian, render).
//! - Solvers: [`greedy`] (3.2), [`anneal`] (3.3), [`softassign`] (3.4, 5), [`exact`] (CPU),
//!   and on the GPU [`auction`] and [`hungarian`] (square matrices of few levels).
//! - [`solve`]: one entry point for every method; [`bench`]: `mosaic bench`, and [`costs`]
//!   its exact solvers on photo, uniform and integer cost matrices (`--costs DIR`).
//! - [`quadtree`]: adaptive cells; [`index`]: the cached tile library; [`compose`]: target + tiles -> mosaic; [`render`],
//!   with [`tint`]'s colour transfer.
//! - [`likeness`]: what the limit on repeats costs a mosaic's likeness.
//! - [`spacing`]: `--min-distance`, the same tile never twice within D cells.
//! - [`demo`]: `mosaic demo`.
//! - [`synth`]: deterministic synthetic images, tiles and matrices.

pub mod anneal;
pub mod auction;
pub mod bench;
pub mod colour;
pub mod compose;
pub mod costs;
pub mod cpu;
pub mod demo;
pub mod error;
pub mod exact;
pub mod features;
pub mod gpu;
pub mod greedy;
pub mod hungarian;
pub mod image_ops;
pub mod index;
pub mod likeness;
pub mod matrix;
pub mod quadtree;
pub mod render;
pub mod softassign;
pub mod solve;
pub mod spacing;
pub mod synth;
pub mod tint;

pub use error::{MosaicError, Result};
pub use matrix::DistanceMatrix;

/// Embedded SPIR-V of `shaders/mosaic/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}

#[cfg(test)]
mod methods_test;
