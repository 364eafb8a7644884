"""Sort-last compositing with Active Pixel encoding (Ahrens & Painter): partial images of
one frame, each colour + depth, composited in one process by :func:`blend`."""

from __future__ import annotations

from typing import Any, Sequence, Tuple

import numpy as np

from . import _tessera
from ._arrays import as_array
from ._common import Device, device_text
from .errors import InvalidInputError

__all__ = ["blend"]


def _images(x: Any, what: str, ndim_one: int) -> list:
    if isinstance(x, (list, tuple)):
        return [as_array(a, f"{what}[{i}]") for i, a in enumerate(x)]
    arr = as_array(x, what)
    if arr.ndim == ndim_one + 1:
        return list(arr)
    raise InvalidInputError(f"{what}: expected a list of images or a stacked array; got shape {arr.shape}")


def blend(
    colors: Any,
    depths: Any,
    *,
    op: str = "zbuffer",
    backend: str = "gpu",
    device: Device = None,
) -> Tuple[np.ndarray, np.ndarray]:
    """Composites partial images, first = front: ``colors`` is a list (or an NxHxWx4 stack)
    of RGBA images (uint8, or float in [0, 1]; premultiplied alpha for ``op="over"``; RGB
    gets alpha 255), ``depths`` the matching HxW float32 depths (1.0 marks background).
    ``op="zbuffer"``: the nearest depth wins (ties to the earlier input); ``"over"``: front
    to back "over" in 8-bit integer arithmetic, identical on CPU and GPU. Returns the RGBA
    image (HxWx4 uint8; 0 where no input is active) and its depth (HxW float32).

    >>> import numpy as np, tessera
    >>> c = [np.full((4, 4, 4), v, np.uint8) for v in (10, 20)]
    >>> z = [np.full((4, 4), d, np.float32) for d in (0.7, 0.3)]
    >>> rgba, depth = tessera.composite.blend(c, z, backend="cpu")
    >>> int(rgba[0, 0, 0]), float(depth[0, 0])
    (20, 0.30000001192092896)
    """
    cs = _images(colors, "colors", 3)
    ds = _images(depths, "depths", 2)
    return _tessera.composite_blend(cs, ds, op, backend, device_text(device))
