//! The compositor's error type: bad `.ap` files, mismatched images, scene problems, and
//! whatever the engine or MPI reported.

use std::path::PathBuf;

/// What went wrong in the compositor library.
#[derive(Debug, thiserror::Error)]
pub enum CompositeError {
    #[error("{path}: not an Active Pixel file: {message}")]
    BadFile { path: PathBuf, message: String },
    #[error("corrupt Active Pixel payload: {0}")]
    Corrupt(String),
    #[error("image sizes differ: {0}")]
    SizeMismatch(String),
    #[error("invalid input: {0}")]
    Invalid(String),
    #[error("scene: {0}")]
    Scene(String),
    #[error("MPI: {0}")]
    Mpi(String),
    /// A rank of a job of several failed, and every rank knows it with the same message
    /// (see `distributed::agree`).
    #[error("rank {rank}: {message}")]
    Rank { rank: usize, message: String },
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
    #[error(transparent)]
    Kit(#[from] kit::KitError),
}

pub type Result<T, E = CompositeError> = std::result::Result<T, E>;
