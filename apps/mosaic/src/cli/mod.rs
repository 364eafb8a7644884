//! The command line of `mosaic`: its arguments and the records it prints.

pub mod args;
pub mod report;
