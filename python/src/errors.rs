//! Failures across the boundary: every error of the app libraries becomes an exception of
//! `tessera.errors` ([`Error`] names which), and a panic in the work becomes a
//! `TesseraError`, never an abort of the interpreter.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;
use pyo3::types::PyType;

/// Which exception of `tessera.errors` a failure raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Bad input: shape, dtype, range, size, an unreadable file (`InvalidInputError`, a
    /// `ValueError`).
    Invalid,
    /// A size over the memory budget (`MemoryBudgetError`, an `InvalidInputError`).
    Budget,
    /// No Vulkan loader, no device, or no device matching `device=` (`NoDeviceError`).
    NoDevice,
    /// A Vulkan failure or a device out of memory (`DeviceError`).
    Device,
    /// Anything else (`TesseraError`).
    Failed,
}

impl Kind {
    fn class_name(self) -> &'static str {
        match self {
            Kind::Invalid => "InvalidInputError",
            Kind::Budget => "MemoryBudgetError",
            Kind::NoDevice => "NoDeviceError",
            Kind::Device => "DeviceError",
            Kind::Failed => "TesseraError",
        }
    }
}

/// A failure on its way to Python.
#[derive(Debug)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: Kind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into() }
    }

    pub fn invalid(message: impl Into<String>) -> Error {
        Error::new(Kind::Invalid, message)
    }

    /// The same failure with `what` in front of its message (`reference: ...`).
    pub fn context(self, what: &str) -> Error {
        Error { kind: self.kind, message: format!("{what}: {}", self.message) }
    }
}

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        Python::attach(|py| {
            let class = py
                .import("tessera.errors")
                .and_then(|m| m.getattr(e.kind.class_name()))
                .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
            match class {
                Ok(class) => PyErr::from_type(class, e.message),
                Err(import_error) => import_error,
            }
        })
    }
}

impl From<engine::EngineError> for Error {
    fn from(e: engine::EngineError) -> Error {
        use engine::EngineError as E;
        let kind = match &e {
            E::Loading(_) | E::NoDevice | E::DeviceNotFound(..) => Kind::NoDevice,
            E::InvalidInput(_) => Kind::Invalid,
            _ => Kind::Device,
        };
        // The engine names the command-line flag; in Python the argument is `device=`.
        Error::new(kind, e.to_string().replace("--device", "device="))
    }
}

impl From<kit::KitError> for Error {
    fn from(e: kit::KitError) -> Error {
        let kind = match &e {
            kit::KitError::OverBudget { .. } => Kind::Budget,
            _ => Kind::Invalid,
        };
        Error::new(
            kind,
            e.to_string().replace("(raise it with --max-memory)", "(raise it with tessera.set_memory_budget)"),
        )
    }
}

impl From<mad::MadError> for Error {
    fn from(e: mad::MadError) -> Error {
        use mad::MadError as E;
        match e {
            E::Engine(e) => e.into(),
            E::Kit(e) => e.into(),
            E::SizeMismatch { .. } | E::TooSmall { .. } => Error::invalid(e.to_string()),
            other => Error::new(Kind::Failed, other.to_string()),
        }
    }
}

/// Runs `work` with the GIL released, so that other Python threads run meanwhile; a panic
/// in it becomes a `TesseraError` naming it.
pub fn run<T: Send>(py: Python<'_>, work: impl FnOnce() -> Result<T> + Send) -> PyResult<T> {
    let outcome = py.detach(|| catch_unwind(AssertUnwindSafe(work)));
    match outcome {
        Ok(result) => result.map_err(PyErr::from),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown cause".into());
            Err(Error::new(Kind::Failed, format!("internal error (please report it): {what}")).into())
        }
    }
}
