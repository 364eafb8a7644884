//! The engine's one error type. Every fallible engine call returns `engine::Result<T>`.
//! Each error has a [`ErrorKind`], which callers (kit's exit codes and JSON errors) read
//! instead of the message.

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
    /// `--device` names several devices for work that runs on one.
    #[error("--device {selector} names {count} devices; this command runs on one")]
    SeveralDevices { selector: String, count: usize },
    /// A `--device` value that is not a device selector.
    #[error("{0}")]
    BadSelector(String),
    /// Data that one storage-buffer binding would have to hold where the device binds less.
    #[error(
        "{what} needs {:.1} MiB in one storage buffer, and {device} binds at most {:.1} MiB",
        *bytes as f64 / 1048576.0,
        *range as f64 / 1048576.0
    )]
    BindingRange { what: String, bytes: u64, range: u64, device: String },
    /// What a pipeline or a pass gives a kernel does not match the kernel's reflected
    /// interface (push-constant size, a binding missing, bound twice or declared with the
    /// wrong access): a mistake in the calling code, named by kernel and binding.
    #[error("{kernel}: {}{problem}", binding_label(*binding))]
    Interface { kernel: &'static str, binding: Option<(u32, &'static str)>, problem: String },
    #[error("out of device memory: asked for {bytes} bytes ({:.1} MiB) for {what}", *bytes as f64 / 1048576.0)]
    OutOfMemory { bytes: u64, what: String },
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("allocator: {0}")]
    Allocator(String),
}

fn binding_label(binding: Option<(u32, &str)>) -> String {
    match binding {
        Some((n, "")) => format!("binding {n} "),
        Some((n, name)) => format!("binding {n} ({name}) "),
        None => String::new(),
    }
}

/// What kind of failure an [`EngineError`] is, for callers that choose an exit code, a flag
/// to blame or a retry without reading the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No device, none that matches `--device`, or several where one is wanted.
    DeviceSelection,
    /// Device or host memory ran out, or a size does not fit in memory at all.
    OutOfMemory,
    /// Data larger than one storage-buffer binding of the device.
    BindingRange,
    /// The device or the system lacks a feature, an extension, a limit or the Vulkan library.
    Unsupported,
    /// A Vulkan call (or the allocator) failed.
    Vulkan,
    /// The caller's data or arguments are not what the call takes.
    InvalidInput,
    /// Calling code disagrees with a kernel's reflected interface.
    Interface,
}

impl EngineError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            EngineError::NoDevice
            | EngineError::DeviceNotFound(..)
            | EngineError::SeveralDevices { .. }
            | EngineError::BadSelector(_) => ErrorKind::DeviceSelection,
            EngineError::OutOfMemory { .. } => ErrorKind::OutOfMemory,
            EngineError::BindingRange { .. } => ErrorKind::BindingRange,
            EngineError::Unsupported(_) | EngineError::Loading(_) => ErrorKind::Unsupported,
            EngineError::Vulkan { .. } | EngineError::Allocator(_) => ErrorKind::Vulkan,
            EngineError::InvalidInput(_) => ErrorKind::InvalidInput,
            EngineError::Interface { .. } => ErrorKind::Interface,
        }
    }

    /// The command-line flag whose value is wrong, where the error is a usage mistake rather
    /// than a failure: `--device` naming several devices for a one-device command, or no
    /// selector at all. (A device that matches nothing is a failure: the flag is well
    /// formed, the machine lacks it.)
    pub fn usage_flag(&self) -> Option<&'static str> {
        match self {
            EngineError::SeveralDevices { .. } | EngineError::BadSelector(_) => Some("--device"),
            _ => None,
        }
    }
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
