"""Sort-last compositing with Active Pixel encoding (Ahrens & Painter): partial images of
one frame, each colour + depth, composited in one process by :func:`blend`, or across the
ranks of an MPI communicator (mpi4py) by a :class:`Compositor`, as a renderer uses IceT."""

from __future__ import annotations

from typing import Any, Sequence, Tuple

import numpy as np

from . import _tessera
from ._arrays import as_array
from ._common import Device, device_text
from .errors import InvalidInputError, TesseraError

__all__ = ["Compositor", "blend"]


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


_STRATEGIES = ("auto", "binary-swap", "radix-k", "direct-send")


class Compositor:
    """This rank's share of compositing on an MPI communicator (an mpi4py ``Comm``; MPI
    stays the caller's to finalise). Making one and every :meth:`composite` are collective:
    every rank of ``comm`` calls them, with the same settings.

    ``color``: ``"rgba8"`` (uint8 HxWx4) or ``"rgba32f"`` (float32/float64 HxWx4, any
    finite values); premultiplied alpha for ``mode="over"``. ``depth``: whether each rank
    gives an HxW float depth (1.0 or +inf is background; without depth, a pixel whose
    colour is all zero is). ``mode``: ``"zbuffer"`` (the nearest depth wins) or ``"over"``
    (premultiplied "over" in ``order``, front to back: rank 0 first unless set).
    ``strategy``: ``"auto"``, ``"binary-swap"``, ``"radix-k"`` or ``"direct-send"``.
    ``backend="auto"`` runs the GPU Active Pixel path where a Vulkan device opens (rank r on
    device r mod n of ``device``, counting the ranks of its node) and the CPU otherwise;
    both give the same image. A bad argument on any rank raises on every rank (the rank
    that gave it raises :class:`InvalidInputError`, the others :class:`TesseraError` naming
    it), so no rank is left waiting.

    Example (``mpirun -n 4 python render.py``)::

        from mpi4py import MPI
        import numpy as np, tessera

        comm = MPI.COMM_WORLD
        c = tessera.composite.Compositor(comm, 640, 480)
        color = np.zeros((480, 640, 4), np.uint8)
        depth = np.ones((480, 640), np.float32)
        # ... this rank draws its share of the scene into color and depth ...
        out = c.composite(color, depth)
        if out is not None:               # the root (rank 0)
            rgba, z = out
            print(c.last_times, c.last_bytes_sent)
    """

    def __init__(
        self,
        comm: Any,
        width: int,
        height: int,
        *,
        color: str = "rgba8",
        depth: bool = True,
        mode: str = "zbuffer",
        strategy: str = "auto",
        order: "Sequence[int] | None" = None,
        root: int = 0,
        background: "Sequence[float] | None" = None,
        backend: str = "auto",
        device: Device = None,
    ) -> None:
        self._c = _tessera.Compositor(comm, int(width), int(height), color, bool(depth), mode, backend, device_text(device))
        if strategy not in _STRATEGIES:
            raise InvalidInputError(f"strategy must be one of {', '.join(map(repr, _STRATEGIES))}; got {strategy!r}")
        self._c.set_strategy(strategy)
        if order is not None:
            self._c.set_order([int(r) for r in order])
        self._c.set_root(int(root))
        if background is not None:
            bg = [float(v) for v in background]
            if len(bg) != 4:
                raise InvalidInputError(f"background must be 4 floats (RGBA); got {len(bg)}")
            self._c.set_background(bg)

    @property
    def rank(self) -> int:
        return self._c.rank

    @property
    def size(self) -> int:
        return self._c.size

    @property
    def root(self) -> int:
        return self._c.root

    @property
    def device(self) -> "str | None":
        """The Vulkan device this rank composites on, or None on the CPU."""
        return self._c.device

    @property
    def last_times(self) -> "dict[str, float]":
        """The last :meth:`composite` on this rank, per phase, in milliseconds: ``total``,
        ``encode``, ``exchange``, ``composite``, ``gather``."""
        return self._c.last_times

    @property
    def last_bytes_sent(self) -> int:
        return self._c.last_bytes_sent

    def composite(
        self, color: Any, depth: Any = None, viewport: "Tuple[int, int, int, int] | None" = None
    ) -> "Tuple[np.ndarray, np.ndarray | None] | None":
        """Composites every rank's image (collective). ``color`` and ``depth`` are this
        rank's full-size buffers, ``viewport`` = (x, y, w, h) from the top-left the pixels
        that hold anything (the rest is ignored). Returns (colour HxWx4, depth HxW or None)
        on the root, the background colour where no rank drew, and None elsewhere."""
        try:
            c = as_array(color, "color")
            d = None if depth is None else as_array(depth, "depth")
            vp = None if viewport is None else tuple(int(v) for v in viewport)
            if vp is not None and len(vp) != 4:
                raise InvalidInputError(f"viewport must be (x, y, w, h); got {len(vp)} values")
        except (TesseraError, TypeError, ValueError) as e:
            self._c.refuse(str(e))
            raise
        return self._c.composite(c, d, vp)
