"""The multidimensional dictionary-ensemble light-field codec (Miandji et al.) on 5-D
arrays of U x V views of H x W RGB pixels: :func:`train` an ensemble, :func:`encode` a
light field to ``.lfc`` bytes, :func:`decode` them, :func:`render` a viewpoint."""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _tessera
from ._arrays import as_array
from ._common import Device, device_text

__all__ = ["Ensemble", "train", "load_ensemble", "encode", "decode", "render"]

Ensemble = _tessera.LfEnsemble
"""A dictionary ensemble (``dictionaries``, ``patch``, ``save(path)`` as ``.lfd``)."""


def train(
    light_fields: Sequence[Any],
    dictionaries: int,
    *,
    patch: str = "5x5x8x8",
    iterations: int = 5,
    epsilon: float = 5e-3,
    sparsity: Optional[int] = None,
    seed: int = 1,
    max_patches: int = 50_000,
    precluster: bool = False,
    backend: str = "gpu",
    device: Device = None,
) -> "_tessera.LfEnsemble":
    """Trains an ensemble of ``dictionaries`` on light fields (each U x V x H x W x 3, uint8,
    uint16 or float in [0, 1]) with patches HxWxUxV, as ``lightfield train`` does."""
    if not isinstance(light_fields, (list, tuple)):
        light_fields = [light_fields]
    lfs = [as_array(lf, f"light_fields[{i}]") for i, lf in enumerate(light_fields)]
    return _tessera.lightfield_train(
        lfs, int(dictionaries), patch, int(iterations), float(epsilon),
        None if sparsity is None else int(sparsity), int(seed), int(max_patches), bool(precluster),
        backend, device_text(device),
    )


def load_ensemble(path: Union[str, os.PathLike]) -> "_tessera.LfEnsemble":
    """Reads a ``.lfd`` ensemble file."""
    return _tessera.lightfield_load_ensemble(os.fspath(path))


def encode(
    light_field: Any,
    ensemble: "_tessera.LfEnsemble",
    sparsity: int,
    epsilon: float = 5e-3,
    *,
    backend: str = "gpu",
    device: Device = None,
) -> bytes:
    """Encodes a light field: each patch keeps at most ``sparsity`` coefficients, enough to
    bring its RMSE under ``epsilon``. Returns the ``.lfc`` file's bytes."""
    return _tessera.lightfield_encode(as_array(light_field, "light_field"), ensemble, int(sparsity), float(epsilon),
                                      backend, device_text(device))


def decode(data: bytes, *, backend: str = "gpu", device: Device = None) -> np.ndarray:
    """The light field (U x V x H x W x 3 float32) of ``.lfc`` bytes."""
    return _tessera.lightfield_decode(bytes(data), backend, device_text(device))


def render(
    light_field: Any,
    view: Optional[Tuple[float, float]] = None,
    focus: float = 0.0,
    aperture: float = 1.0,
    *,
    size: Optional[Tuple[int, int]] = None,
    backend: str = "gpu",
    device: Device = None,
) -> np.ndarray:
    """Renders a viewpoint of a light field (HxWx3 uint8): ``view`` = (u, v) in view
    indices, fractional between captured views (default the centre), refocused at disparity
    ``focus`` (pixels per view), blended over a radius of ``aperture`` views; ``size`` =
    (W, H) scales the output."""
    return _tessera.lightfield_render(as_array(light_field, "light_field"), view, float(focus), float(aperture), size,
                                      backend, device_text(device))
