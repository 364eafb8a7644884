//! placeholder
use super::Kernel;
pub const ALL: [&dyn Kernel; 0] = [];
