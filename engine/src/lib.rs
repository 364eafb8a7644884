//! Tessera's engine: the one Vulkan resource layer every app stands on.
//!
//! - [`context`]: instance, device choice, queues, features, limits, multi-device.
//! - [`memory`]: typed buffers through gpu-allocator, staging, upload/download.
//! - [`pipeline`]: compute pipelines from embedded SPIR-V, specialization and push constants.
//! - [`commands`]: recording, sync2 barriers, timeline-semaphore submission.
//! - [`profile`]: timestamp queries turned into named per-pass GPU milliseconds.
//! - [`prims`]: GPU building blocks with CPU references (scan, reduce, sort, FFT, GEMM).
//! - [`select`]: `--device` as one typed value, and the rule that turns it into devices.
//! - [`stream`]: a ring of chunk slots in flight, uploads on the transfer queue overlapping
//!   compute.
//!
//! A typical kernel launch:
//! ```no_run
//! # fn main() -> engine::Result<()> {
//! let ctx = engine::Context::open_default()?;
//! let data = ctx.upload(&[1u32, 2, 3], "input")?;
//! let sum = engine::prims::reduce::Reducer::new(&ctx)?.sum_u32(&data)?;
//! # Ok(()) }
//! ```

pub mod ceilings;
pub mod commands;
pub mod context;
pub mod error;
pub mod graphics;
pub mod memory;
pub mod pipeline;
pub mod present;
pub mod prims;
pub mod profile;
pub mod select;
pub mod stream;
pub mod testing;

pub use ash::vk;
pub use commands::{linear_grid, Recorder, Submission};
pub use context::{validation_message_count, Context, ContextOptions, DeviceInfo, Instance};
pub use error::{EngineError, Result};
pub use memory::{Bind, Buffer, BufferBinding, Location};
pub use pipeline::{ComputePipeline, PipelineStatistics};
pub use profile::PassTime;
pub use select::{DeviceRef, DeviceSelector};

/// Embedded SPIR-V of `shaders/engine/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
