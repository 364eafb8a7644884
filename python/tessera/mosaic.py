"""Photomosaics without repeated tiles (Blasi & Petralia's SoftAssign on the GPU, greedy,
annealing and the exact optimum): :func:`solve` on a distance matrix, :func:`build` from a
target image and a tile library."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _tessera
from ._arrays import as_array, is_path
from ._common import Device, device_text
from .errors import InvalidInputError

__all__ = ["Solved", "Mosaic", "solve", "build"]


@dataclass(frozen=True)
class Solved:
    """An assignment: ``assignment[i]`` is the tile of patch ``i`` (int64)."""

    assignment: np.ndarray
    cost: float
    """The sum of the chosen distances (float64)."""
    method: str
    backend: str
    """Where the solver ran ("gpu" or "cpu"; greedy and anneal always run on the CPU)."""
    duality_gap: Optional[float]
    """For ``method="exact"``: the cost minus the dual bound that certifies the optimum."""
    solve_ms: float


@dataclass(frozen=True)
class Mosaic(Solved):
    """A built mosaic: the solve, and the image (HxWx3 uint8)."""

    image: np.ndarray = None  # type: ignore[assignment]
    render_ms: float = 0.0


def _solved_fields(d: dict) -> dict:
    return {k: d[k] for k in ("assignment", "cost", "method", "backend", "duality_gap", "solve_ms")}


def solve(
    distance: Any,
    method: str = "exact",
    repeat: int = 1,
    *,
    seed: int = 0,
    backend: str = "gpu",
    device: Device = None,
) -> Solved:
    """Assigns each of m patches (rows) one of n tiles (columns) of ``distance`` (m x n,
    float32 or float64, finite, >= 0), each tile used at most ``repeat`` times, minimising
    the total distance. ``method`` is "exact" (the optimum: a GPU solver certified in f64),
    "softassign" (the paper's GPU method), "greedy" or "anneal" (CPU, seeded by ``seed``).

    >>> import numpy as np, tessera
    >>> d = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> s = tessera.mosaic.solve(d, backend="cpu")
    >>> s.assignment.tolist(), s.cost
    ([1, 0], 0.0)
    """
    arr = as_array(distance, "distance")
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.float64)
    d = _tessera.mosaic_solve(arr, method, int(repeat), int(seed), backend, device_text(device))
    return Solved(**_solved_fields(d))


def _grid(g: Union[str, Tuple[int, int]], what: str) -> Tuple[int, int]:
    if isinstance(g, str):
        parts = g.lower().split("x")
        if len(parts) == 2 and all(p.strip().isdigit() for p in parts):
            return int(parts[0]), int(parts[1])
        raise InvalidInputError(f"{what}: {g!r} is not of the form AxB")
    try:
        a, b = g
        return int(a), int(b)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{what}: expected (columns, rows) or 'AxB'; got {g!r}") from None


def build(
    target: Any,
    tiles: Union[str, os.PathLike, Sequence[Any]],
    grid: Union[str, Tuple[int, int]],
    *,
    method: str = "exact",
    repeat: int = 1,
    cells: Union[str, Tuple[int, int]] = (4, 4),
    tile_px: int = 32,
    tint: float = 0.0,
    seed: int = 0,
    backend: str = "gpu",
    device: Device = None,
    metric: str = "lab",
) -> Mosaic:
    """Builds a photomosaic of ``target`` (an image array or file) from ``tiles`` (a folder
    of images, or a list of image arrays) on a ``grid`` of (columns, rows) patches, as
    ``mosaic build`` does: u x v mean-colour ``cells`` per patch compared by ``metric``
    (``"lab"``, ``"ciede2000"`` or ``"rgb"``, as ``--metric``), ``tile_px`` pixels per
    cell in the output, ``tint`` in [0, 1] to move each tile's colours toward its patch.
    Arrays are read as 8-bit RGB.

    >>> import numpy as np, tessera
    >>> rng = np.random.default_rng(0)
    >>> target = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    >>> tiles = [rng.integers(0, 256, (16, 16, 3), dtype=np.uint8) for _ in range(20)]
    >>> m = tessera.mosaic.build(target, tiles, (4, 4), tile_px=8, backend="cpu")
    >>> m.image.shape
    (32, 32, 3)
    """
    if not is_path(target):
        target = as_array(target, "target")
    if not is_path(tiles):
        tiles = [as_array(t, f"tile {i}") for i, t in enumerate(tiles)]
    d = _tessera.mosaic_build(
        target,
        tiles,
        _grid(grid, "grid"),
        method,
        int(repeat),
        _grid(cells, "cells"),
        int(tile_px),
        float(tint),
        int(seed),
        backend,
        device_text(device),
        metric,
    )
    return Mosaic(**_solved_fields(d), image=d["image"], render_ms=d["render_ms"])

