"""MAD (Most Apparent Distortion, Larson & Chandler 2010) as the authors' release defines
it: :func:`mad`, :func:`mad_batch` and the pyiqa-shaped :func:`create_metric`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from . import _tessera
from ._arrays import as_array, is_path
from ._common import Device, cached, to_torch_like
from .errors import InvalidInputError


@dataclass(frozen=True)
class MadMaps:
    """The per-pixel maps of a pair (HxW float32, before the 17-pixel crop)."""

    detection: np.ndarray
    """``msk .* lmse`` of the detection stage."""
    appearance: np.ndarray
    """The weighted statistics differences of the appearance stage."""
    combined: np.ndarray
    """``detection**alpha * appearance**(1 - alpha)`` with the pair's alpha."""


@dataclass(frozen=True)
class MadResult:
    """The scores of one pair. Lower is better; 0 for identical images."""

    mad: float
    detection: float
    """d_detect, the near-threshold stage (the release's ``index.HI``)."""
    appearance: float
    """d_appear, the supra-threshold stage (the release's ``index.LO``)."""
    alpha: float
    """The weight of d_detect in the blend."""
    maps: Optional[MadMaps] = None

    def __float__(self) -> float:
        return self.mad


def _scorer(backend: str, device: Device) -> "_tessera.MadScorer":
    return cached("mad", lambda b, d: _tessera.MadScorer(b, d), backend, device)


def _result(t: tuple) -> MadResult:
    mad, detection, appearance, alpha, maps = t
    return MadResult(mad, detection, appearance, alpha, MadMaps(*maps) if maps is not None else None)


def mad(
    reference: Any,
    distorted: Any,
    *,
    maps: bool = False,
    backend: str = "gpu",
    device: Device = None,
) -> MadResult:
    """Scores a distorted image against its reference with MAD.

    ``reference`` and ``distorted`` are images of one size, at least 34x34: HxW (grey), HxWx3
    (RGB) or HxWx4 (RGBA, alpha dropped) numpy arrays or CPU torch tensors, uint8, uint16
    (0..65535) or float32/float64 in [0, 1]; or two image file paths, read as ``mad score``
    reads them. RGB becomes grey as the release's ``rgb2gray`` does; a float image whose
    samples are all 8-bit levels (``k / 255``, such as ``ToTensor()`` of an 8-bit image)
    scores as that 8-bit image. ``maps=True`` adds the per-pixel maps.

    >>> import numpy as np, tessera
    >>> ref = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    >>> dist = np.clip(ref.astype(int) + 8, 0, 255).astype(np.uint8)
    >>> r = tessera.mad(ref, dist, backend="cpu")
    >>> r.mad > 0
    True
    """
    scorer = _scorer(backend, device)
    if is_path(reference) and is_path(distorted):
        return _result(scorer.score_files(str(reference), str(distorted), maps))
    if is_path(reference) or is_path(distorted):
        raise InvalidInputError("give two arrays or two image file paths, not one of each")
    return _result(scorer.score(as_array(reference, "reference"), as_array(distorted, "distorted"), maps))


def _batch_list(x: Any, what: str) -> "tuple[list, str]":
    """A batch as a list of images and their layout: an NxCxHxW array (C = 1, 3, 4), an NxHxW
    array of grey images, or a sequence of HxW / HxWxC images."""
    if isinstance(x, (list, tuple)):
        return [as_array(item, f"{what} {i}") for i, item in enumerate(x)], "hwc"
    arr = as_array(x, what)
    if arr.ndim == 4:
        return list(arr), "chw"
    if arr.ndim == 3:
        return list(arr), "hwc"
    raise InvalidInputError(
        f"{what}: expected an NxCxHxW batch, an NxHxW batch of grey images or a list of images; got shape {arr.shape}"
    )


def mad_batch(references: Any, distorted: Any, *, backend: str = "gpu", device: Device = None) -> np.ndarray:
    """Scores pairs ``(references[i], distorted[i])`` of one size, batched on the GPU as
    ``mad batch`` batches them (one worker per device of ``device=``, such as ``"all"``).

    ``references`` and ``distorted`` are NxCxHxW arrays or CPU tensors (C = 1, 3 or 4), NxHxW
    grey batches, or sequences of images as :func:`mad` takes them. Returns the N MAD scores
    (float64).

    >>> import numpy as np, tessera
    >>> refs = np.random.default_rng(1).random((2, 3, 40, 48), dtype=np.float32)
    >>> tessera.mad_batch(refs, refs, backend="cpu").tolist()
    [0.0, 0.0]
    """
    refs, layout = _batch_list(references, "references")
    dists, dist_layout = _batch_list(distorted, "distorted")
    if layout != dist_layout:
        raise InvalidInputError("references and distorted images must have the same layout (both NxCxHxW, or both lists)")
    return _scorer(backend, device).batch(refs, dists, layout)


class MadMetric:
    """MAD shaped like a pyiqa metric: ``metric(dist, ref)`` scores NxCxHxW batches (numpy or
    CPU torch; torch in gives a torch tensor out) or two image paths. It keeps its device and
    pipelines between calls. Lower is better."""

    metric_name = "mad"
    lower_better = True

    def __init__(self, backend: str = "gpu", device: Device = None):
        self.backend = backend
        self.device = device
        self._scorer = _scorer(backend, device)

    def __call__(self, dist: Any, ref: Any) -> Any:
        if is_path(dist) and is_path(ref):
            return np.array([self._scorer.score_files(str(ref), str(dist), False)[0]])
        d = as_array(dist, "dist")
        if d.ndim == 4:
            scores = mad_batch(ref, dist, backend=self.backend, device=self.device)
        elif d.ndim in (2, 3):
            scores = np.array([mad(ref, dist, backend=self.backend, device=self.device).mad])
        else:
            raise InvalidInputError(f"dist: expected an NxCxHxW batch or one image; got shape {d.shape}")
        return to_torch_like(scores, dist)

    def __repr__(self) -> str:
        return f"MadMetric(backend={self.backend!r}, device={self.device!r}, devices={self._scorer.devices!r})"


def create_metric(name: str, *, backend: str = "gpu", device: Device = None) -> MadMetric:
    """A metric by name, shaped like ``pyiqa.create_metric``: today ``"mad"``.

    >>> import tessera
    >>> metric = tessera.create_metric("mad", backend="cpu")
    >>> metric.lower_better
    True
    """
    if name.lower() != "mad":
        raise InvalidInputError(f"unknown metric {name!r}; tessera has 'mad'")
    return MadMetric(backend=backend, device=device)
