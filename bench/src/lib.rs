//! Benchmark support shared by the criterion benches and the `sweep` binary.
