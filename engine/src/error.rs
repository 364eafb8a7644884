//! The engine's one error type. Every fallible engine call returns `engine::Result<T>`.

use ash::vk;

/// What went wrong in the engine. Vulkan failures keep the raw `vk::Result` and say which
/// call failed; out-of-memory names the size that was asked for.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot load the Vulkan library (is libvulkan1 installed?): {0}")]
    Loading(String),
    #[error("Vulkan call {call} failed: {result}")]
    Vulkan { call: &'static str, result: vk::Result },
    #[error("no Vulkan 1.3 device found")]
    NoDevice,
    #[error("no device matches --device {0:?}; devices: {1}")]
    DeviceNotFound(String, String),
    #[error("out of device memory: asked for {bytes} bytes ({:.1} MiB) for {what}", *bytes as f64 / 1048576.0)]
    OutOfMemory { bytes: u64, what: String },
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("allocator: {0}")]
    Allocator(String),
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// Turns a `vk::Result` into an [`EngineError::Vulkan`] naming the call.
pub(crate) trait VkContext<T> {
    fn vk(self, call: &'static str) -> Result<T>;
    /// [`VkContext::vk`] for a call creating an object of `bytes` for `what`: running out
    /// of memory names those instead of the call.
    fn vk_creating(self, call: &'static str, bytes: u64, what: &str) -> Result<T>;
}

impl<T> VkContext<T> for std::result::Result<T, vk::Result> {
    fn vk(self, call: &'static str) -> Result<T> {
        self.vk_creating(call, 0, call)
    }

    fn vk_creating(self, call: &'static str, bytes: u64, what: &str) -> Result<T> {
        self.map_err(|result| match result {
            vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY => {
                EngineError::OutOfMemory { bytes, what: what.into() }
            }
            result => EngineError::Vulkan { call, result },
        })
    }
}
