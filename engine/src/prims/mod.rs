//! GPU building blocks used by several apps. Each has a CPU reference beside it and tests
//! that compare the two on random inputs at awkward sizes.

pub mod fft;
pub mod gemm;
pub mod reduce;
pub mod scan;
pub mod sort;
