//! The error of every edge: a file that cannot be read or written, an input that breaks a
//! rule, a size over the memory budget.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum KitError {
    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },
    #[error("{0}")]
    Invalid(String),
    #[error(
        "{what} needs {} but the memory budget is {} (raise it with --max-memory)",
        crate::units::human(*bytes),
        crate::units::human(*budget)
    )]
    OverBudget { what: String, bytes: u64, budget: u64 },
    /// No window could be opened, or the window system's event loop failed (the viewers'
    /// window, `viewer`).
    #[error("cannot open a window: {0}")]
    Window(String),
}

pub type Result<T, E = KitError> = std::result::Result<T, E>;

impl KitError {
    /// An error about one file.
    pub fn file(path: impl Into<PathBuf>, message: impl std::fmt::Display) -> Self {
        KitError::File { path: path.into(), message: message.to_string() }
    }
}
