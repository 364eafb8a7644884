//! The one error type of the smoe library: what a model, an input, the device or the memory
//! budget refused, each with the structure a caller needs to react to it without reading text.

use crate::model::ModelError;

/// Errors of the smoe library.
#[derive(Debug, thiserror::Error)]
pub enum SmoeError {
    /// A model (or the file holding it) that is refused; names the file or the kernel.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The device (selection, memory, a binding's range, a Vulkan call).
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    /// A fit the device cannot hold, found before anything is allocated on it.
    #[error(
        "fitting {what} needs about {} of device memory, more than the {} {device} has; use fewer kernels or a smaller input",
        kit::units::human(*.needed),
        kit::units::human(*.available)
    )]
    DeviceMemory { what: String, needed: u64, available: u64, device: String },
    /// An argument out of its range; names it.
    #[error("{0}")]
    Invalid(String),
}

kit::app_error!(SmoeError);

pub type Result<T, E = SmoeError> = std::result::Result<T, E>;
