"""Type stubs of the native module (python/src); the public API is the pure-Python layer."""

from os import PathLike
from typing import Any, Optional, Sequence

import numpy as np

__version__: str

def devices() -> list[dict[str, Any]]: ...
def set_memory_budget(bytes: int) -> None: ...
def memory_budget() -> int: ...
def validation_messages() -> int: ...

_Maps = Optional[tuple[np.ndarray, np.ndarray, np.ndarray]]
_Scores = tuple[float, float, float, float, _Maps]

class MadScorer:
    def __init__(self, backend: str = "gpu", device: Optional[str] = None) -> None: ...
    @property
    def devices(self) -> list[str]: ...
    def score(self, reference: np.ndarray, distorted: np.ndarray, maps: bool = False) -> _Scores: ...
    def score_files(self, reference: str | PathLike[str], distorted: str | PathLike[str], maps: bool = False) -> _Scores: ...
    def batch(self, references: Sequence[np.ndarray], distorted: Sequence[np.ndarray], layout: str) -> np.ndarray: ...

def mosaic_solve(
    distance: np.ndarray, method: str = "exact", repeat: int = 1, seed: int = 0, backend: str = "gpu", device: Optional[str] = None
) -> dict[str, Any]: ...
def mosaic_build(
    target: Any,
    tiles: Any,
    grid: tuple[int, int],
    method: str = "exact",
    repeat: int = 1,
    cells: tuple[int, int] = (4, 4),
    tile_px: int = 32,
    tint: float = 0.0,
    seed: int = 0,
    backend: str = "gpu",
    device: Optional[str] = None,
) -> dict[str, Any]: ...
def composite_blend(
    colors: Sequence[np.ndarray], depths: Sequence[np.ndarray], op: str = "zbuffer", backend: str = "gpu", device: Optional[str] = None
) -> tuple[np.ndarray, np.ndarray]: ...

class Compositor:
    rank: int
    size: int
    root: int
    device: Optional[str]
    last_times: dict[str, float]
    last_bytes_sent: int
    def __init__(
        self, comm: object, width: int, height: int, color: str = "rgba8", depth: bool = True, mode: str = "zbuffer",
        backend: str = "auto", device: Optional[str] = None,
    ) -> None: ...
    def refuse(self, message: str) -> None: ...
    def set_strategy(self, strategy: str) -> None: ...
    def set_order(self, ranks_front_to_back: Sequence[int]) -> None: ...
    def set_root(self, root: int) -> None: ...
    def set_background(self, rgba: Sequence[float]) -> None: ...
    def composite(
        self, color: np.ndarray, depth: Optional[np.ndarray] = None, viewport: Optional[tuple[int, int, int, int]] = None
    ) -> Optional[tuple[np.ndarray, Optional[np.ndarray]]]: ...

class LfEnsemble:
    dictionaries: int
    patch: str
    def save(self, path: str) -> None: ...

def lightfield_train(
    light_fields: Sequence[np.ndarray],
    dictionaries: int,
    patch: str = "5x5x8x8",
    iterations: int = 5,
    epsilon: float = 5e-3,
    sparsity: Optional[int] = None,
    seed: int = 1,
    max_patches: int = 50_000,
    precluster: bool = False,
    backend: str = "gpu",
    device: Optional[str] = None,
) -> LfEnsemble: ...
def lightfield_load_ensemble(path: str) -> LfEnsemble: ...
def lightfield_encode(
    light_field: np.ndarray, ensemble: LfEnsemble, sparsity: int, epsilon: float = 5e-3, backend: str = "gpu", device: Optional[str] = None
) -> bytes: ...
def lightfield_decode(data: bytes, backend: str = "gpu", device: Optional[str] = None) -> np.ndarray: ...
def lightfield_render(
    light_field: np.ndarray,
    view: Optional[tuple[float, float]] = None,
    focus: float = 0.0,
    aperture: float = 1.0,
    size: Optional[tuple[int, int]] = None,
    backend: str = "gpu",
    device: Optional[str] = None,
) -> np.ndarray: ...

class SmoeModel:
    kernels: int
    coord_dims: int
    extent: list[int]
    psnr_db: Optional[float]
    priors: np.ndarray
    means: np.ndarray
    covariances: np.ndarray
    def render(
        self, size: Optional[tuple[int, int]], view: Optional[tuple[float, float]], backend: str, device: Optional[str]
    ) -> np.ndarray: ...
    def save(self, path: str) -> None: ...

def smoe_fit(
    data: np.ndarray,
    kernels: Optional[int],
    psnr: Optional[float],
    iterations: int,
    init: str,
    refine_steps: int,
    refine_lr: float,
    backend: str,
    device: Optional[str],
) -> SmoeModel: ...
def smoe_load(path: str) -> SmoeModel: ...
