"""Turning what users pass (numpy arrays, CPU torch tensors, sequences of them) into the
numpy arrays the native module reads. No copy is made of a numpy array: any strides and
read-only arrays are read where they lie."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .errors import InvalidInputError

_DTYPES = (np.uint8, np.uint16, np.float32, np.float64)


def as_array(x: Any, what: str) -> np.ndarray:
    """``x`` as a numpy array: a numpy array as it is, a torch tensor through ``.numpy()``
    (it must be on the CPU), anything else through ``np.asarray``."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        device = getattr(x, "device", None)
        if device is not None and getattr(device, "type", "cpu") != "cpu":
            raise InvalidInputError(f"{what}: a torch tensor on {device}; move it to the CPU first (tensor.cpu())")
        return x.detach().numpy()
    if isinstance(x, (str, bytes, os.PathLike)):
        raise InvalidInputError(f"{what}: expected an array, got a path {x!r}")
    try:
        arr = np.asarray(x)
    except Exception as e:  # numpy's own message names the problem
        raise InvalidInputError(f"{what}: cannot be read as an array: {e}") from None
    if arr.dtype == np.bool_ or arr.dtype == object:
        raise InvalidInputError(f"{what}: expected a numeric array, got dtype {arr.dtype}")
    return arr


def is_path(x: Any) -> bool:
    return isinstance(x, (str, os.PathLike))


def is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")
