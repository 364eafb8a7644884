//! The codec's error type: bad input files, bad parameters, and engine failures.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LfError {
    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },
    /// A bad parameter or input value; the message says which (no prefix of its own, so that
    /// a message that is wrapped in a file's or a flag's context reads once).
    #[error("{0}")]
    Invalid(String),
    #[error("corrupt {what}: {message}")]
    Corrupt { what: &'static str, message: String },
    /// A file or size refused at the edges (not a regular file, over the memory budget, a
    /// write that failed).
    #[error(transparent)]
    Kit(#[from] kit::KitError),
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
}

pub type Result<T, E = LfError> = std::result::Result<T, E>;

impl LfError {
    pub fn file(path: impl Into<PathBuf>, message: impl std::fmt::Display) -> Self {
        LfError::File { path: path.into(), message: message.to_string() }
    }

    pub fn corrupt(what: &'static str, message: impl std::fmt::Display) -> Self {
        LfError::Corrupt { what, message: message.to_string() }
    }
}
