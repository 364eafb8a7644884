"""Steered Mixture-of-Experts (Verhack et al.): a model of kernels fitted to an image or a
light field by EM and refinement (:func:`fit`), rendered back (:meth:`Model.render`),
saved and loaded in the ``smoe`` formats (:func:`load`)."""

from __future__ import annotations

import os
from typing import Any, Optional, Tuple, Union

import numpy as np

from . import _tessera
from ._arrays import as_array
from ._common import Device, device_text

__all__ = ["Model", "fit", "load"]


class Model:
    """A fitted or loaded SMoE model."""

    def __init__(self, native: "_tessera.SmoeModel"):
        self._native = native

    @property
    def kernels(self) -> int:
        """The number of kernels K."""
        return self._native.kernels

    @property
    def coord_dims(self) -> int:
        """2 for images (x, y), 4 for light fields (x, y, u, v)."""
        return self._native.coord_dims

    @property
    def extent(self) -> "list[int]":
        """Pixels per axis: [W, H] or [W, H, U, V]."""
        return self._native.extent

    @property
    def psnr_db(self) -> Optional[float]:
        """The fit's PSNR as the model renders (dB); None for a loaded model."""
        return self._native.psnr_db

    @property
    def priors(self) -> np.ndarray:
        """Priors (K,)."""
        return self._native.priors

    @property
    def means(self) -> np.ndarray:
        """Means (K, D): normalised coordinates in [0, 1], then RGB."""
        return self._native.means

    @property
    def covariances(self) -> np.ndarray:
        """Covariances (K, D, D), symmetric."""
        return self._native.covariances

    def render(
        self,
        size: Optional[Tuple[int, int]] = None,
        view: Optional[Tuple[float, float]] = None,
        *,
        backend: str = "gpu",
        device: Device = None,
    ) -> np.ndarray:
        """Renders the model as an HxWx3 float32 image: at ``size`` = (W, H) (default its
        extent), for a light field at ``view`` = (u, v) in view indices (default the centre),
        as ``smoe render`` renders it."""
        return self._native.render(size, view, backend, device_text(device))

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Saves the model: JSON for ``.json``, the binary format for ``.smoe`` / ``.bin``, the
        compact entropy-coded format for ``.smc`` (quantised at the default quality)."""
        self._native.save(os.fspath(path))

    def __repr__(self) -> str:
        return repr(self._native)


def fit(
    data: Any,
    kernels: Optional[int] = None,
    psnr: Optional[float] = None,
    *,
    iterations: int = 40,
    init: str = "kmeans",
    refine_steps: int = 400,
    refine_lr: float = 0.01,
    backend: str = "gpu",
    device: Device = None,
) -> Model:
    """Fits a model to ``data``: an image (HxW, HxWx3, HxWx4) or a light field (U x V x H x
    W x 3), uint8, uint16 or float in [0, 1]. ``kernels=K`` fits K kernels; ``psnr=DB`` the
    smallest K (within 10%; ``kernels`` caps it) whose fit reaches DB, as ``smoe fit`` does.

    >>> import numpy as np, tessera
    >>> img = np.random.default_rng(0).random((16, 16, 3), dtype=np.float32)
    >>> m = tessera.smoe.fit(img, kernels=8, iterations=3, refine_steps=0, backend="cpu")
    >>> m.kernels, m.render(backend="cpu").shape
    (8, (16, 16, 3))
    """
    arr = as_array(data, "data")
    native = _tessera.smoe_fit(
        arr,
        None if kernels is None else int(kernels),
        None if psnr is None else float(psnr),
        int(iterations),
        init,
        int(refine_steps),
        float(refine_lr),
        backend,
        device_text(device),
    )
    return Model(native)


def load(path: Union[str, os.PathLike]) -> Model:
    """Loads a model file (``.json``, ``.smoe``, ``.bin``, ``.smc``), checked as the CLI checks it."""
    return Model(_tessera.smoe_load(os.fspath(path)))
