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
    /// `--min-distance` on a grid whose cell count is not the matrix's row count.
    #[error("--grid {cols}x{rows} has {} cells but the distance matrix has {patches} rows (patches)", cols * rows)]
    GridMismatch { cols: usize, rows: usize, patches: usize },
    /// `--min-distance` with fewer tiles than the most cells one window of the grid meets.
    #[error(
        "--min-distance {distance} needs at least {needed} tiles (the cells over any {side}x{side} block of the grid, of \
         --min-cell squares for adaptive cells, show distinct tiles), but there are {tiles}; add tiles or use a smaller \
         --min-distance",
        side = distance + 1
    )]
    SpacingInfeasible { distance: usize, tiles: usize, needed: usize },
    /// A cell left without a tile it may show under `--min-distance` and `--repeat`.
    #[error(
        "cell (col {}, row {}) has no tile left that --min-distance {distance} and the repeat allow ({tiles} tiles); \
         allow more repeats, add tiles or use a smaller --min-distance",
        cell.0, cell.1
    )]
    SpacingStuck { cell: (usize, usize), distance: usize, tiles: usize },
    /// An assignment that shows one tile twice within the distance (a solver's bug, caught
    /// before anything is written).
    #[error("tile {tile} is shown at {a:?} and {b:?} (col, row), within --min-distance {distance}")]
    SpacingViolated { tile: usize, a: (usize, usize), b: (usize, usize), distance: usize },
    /// `--min-cell` and `--max-cell` that no quadtree has.
    #[error("--min-cell {min} and --max-cell {max}: the largest cell must be the smallest times a power of two (1, 2, 4, ...), and the smallest at least 1 pixel")]
    CellSizes { min: usize, max: usize },
    /// A smallest cell with fewer pixels than feature cells.
    #[error(
        "--min-cell {min} is smaller than the {}x{} feature cells each cell is measured by; use --min-cell {} or fewer --cells",
        cells.0, cells.1, cells.0.max(cells.1)
    )]
    MinCellTooSmall { min: usize, cells: (usize, usize) },
    /// A target smaller than one cell of the adaptive layout.
    #[error("the target ({width}x{height}) is smaller than one --min-cell {min} cell")]
    TargetTooSmall { width: usize, height: usize, min: usize },
    #[error(transparent)]
    Kit(#[from] kit::KitError),
    #[error(transparent)]
    Engine(#[from] engine::EngineError),
}

kit::app_error!(MosaicError);

pub type Result<T, E = MosaicError> = std::result::Result<T, E>;

impl MosaicError {
    pub(crate) fn file(path: impl Into<PathBuf>, message: impl std::fmt::Display) -> Self {
        MosaicError::File { path: path.into(), message: message.to_string() }
    }
}
