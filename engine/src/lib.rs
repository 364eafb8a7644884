//! Tessera's engine: the one Vulkan resource layer every app stands on.
//!
//! - [`context`]: instance, device choice, queues, features, limits, multi-device.
//! - [`memory`]: typed buffers through gpu-allocator, staging, upload/download.
//! - [`kernel`]: compute kernels created from the descriptors shader-build reflects out of
//!   their SPIR-V ([`reflect`]); [`pipeline`]: the pipelines under them.
//! - [`pass`]: declared passes; the recorder derives their barriers and keeps what they bind
//!   alive. [`commands`]: recording, timeline-semaphore submission.
//! - [`profile`]: timestamp queries turned into named per-pass GPU milliseconds.
//! - [`prims`]: GPU building blocks with CPU references (scan, reduce, sort, FFT, GEMM).
//! - [`select`]: `--device` as one typed value, and the rule that turns it into devices.
//! - [`stream`]: a ring of chunk slots in flight, uploads on the transfer queue overlapping
//!   compute.
//!
//! A typical kernel launch:
//! ```no_run
//! # fn main() -> engine::Result<()> {
//! use engine::shaders::kernels;
//! # #[repr(C)] #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)] struct SumPush { n: u32, per_group: u32 }
//! let ctx = engine::Context::open_default()?;
//! let data = ctx.upload(&[1u32, 2, 3], "input")?;
//! let partials = ctx.buffer::<u32>(1, engine::Location::Device, "partials")?;
//! let sum = ctx.kernel::<SumPush>(&kernels::REDUCE_SUM_U32, &[64])?;
//! let mut rec = ctx.recorder()?;
//! rec.pass(&sum).read(&data).write(&partials).push(&SumPush { n: 3, per_group: 3 }).dispatch_linear(1)?;
//! rec.submit()?.wait()?;
//! # Ok(()) }
//! ```

// The generated `shaders::kernels` name the engine's types as `engine::`, in every crate.
extern crate self as engine;

pub mod ceilings;
pub mod commands;
pub mod context;
pub mod error;
pub mod graphics;
pub(crate) mod hazards;
pub mod kernel;
pub mod memory;
pub mod pass;
pub mod pipeline;
pub mod present;
pub mod prims;
pub mod profile;
#[path = "../shader-build/src/reflect.rs"]
pub mod reflect;
pub mod select;
pub mod stream;
pub mod testing;

pub use ash::vk;
pub use commands::{linear_grid, Recorder, Replay, Submission, MAX_GROUPS_PER_AXIS};
pub use context::{validation_message_count, Context, ContextOptions, DeviceInfo, Instance};
pub use error::{EngineError, ErrorKind, Result};
pub use kernel::{Access, BindingDesc, Dim, Kernel, KernelDesc, SpecDesc};
pub use memory::{Bind, Buffer, BufferBinding, Location, Region, Resource};
pub use pass::Pass;
pub use pipeline::{ComputePipeline, PipelineStatistics};
pub use profile::PassTime;
pub use select::{DeviceRef, DeviceSelector};

/// Embedded SPIR-V of `shaders/engine/`.
pub mod shaders {
    include!(concat!(env!("OUT_DIR"), "/shaders.rs"));
}
