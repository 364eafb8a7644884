//! The crate's error type: bad inputs say what is wrong and where, engine failures pass through.

use std::path::PathBuf;

/// What can go wrong in the mosaic library.
#[derive(Debug, thiserror::Error)]
pub enum MosaicError {
    #[error("invalid distance matrix: {0}")]
    BadMatrix(String),
    /// A problem that breaks a rule; the message leads with what breaks it (a flag, a count).
    #[error("{0}")]
    InvalidInput(String),
    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },
    #[error(transparent)]
    Kit(#[from] kit::KitError),
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
}

pub type Result<T, E = MosaicError> = std::result::Result<T, E>;

impl MosaicError {
    pub(crate) fn file(path: impl Into<PathBuf>, message: impl std::fmt::Display) -> Self {
        MosaicError::File { path: path.into(), message: message.to_string() }
    }
}
