"""Tessera from Python: GPU imaging workloads (Vulkan compute) on numpy arrays.

- :func:`mad`, :func:`mad_batch`, :func:`create_metric`: the MAD image quality metric.
- :mod:`tessera.mosaic`, :mod:`tessera.smoe`, :mod:`tessera.lightfield`,
  :mod:`tessera.composite`: the other workloads.
- :func:`devices` lists the Vulkan devices ``device=`` selects from.

Every call takes ``backend="gpu"`` (Vulkan) or ``"cpu"`` (the multithreaded Rust
reference) and ``device=`` (an index, a name substring, a list or ``"all"``). Errors are
:class:`TesseraError`; bad input is :class:`InvalidInputError` (a ``ValueError``).
"""

from __future__ import annotations

from typing import NamedTuple

from . import _tessera
from ._common import clear_cache
from . import composite, lightfield, mosaic, smoe
from ._mad import MadMaps, MadMetric, MadResult, create_metric, mad, mad_batch
from .errors import DeviceError, InvalidInputError, MemoryBudgetError, NoDeviceError, TesseraError

__version__ = _tessera.__version__


class Device(NamedTuple):
    """A Vulkan 1.3 device, as ``gpu-info`` lists it."""

    index: int
    name: str
    type: str
    api_version: str
    memory_bytes: int
    subgroup_size: int


def devices() -> "list[Device]":
    """The Vulkan 1.3 devices of this machine; ``device=`` takes an index into this list or
    a substring of a name. Without a GPU, Mesa's lavapipe (``llvmpipe``) is the device.

    >>> import tessera
    >>> [d.name for d in tessera.devices()]  # doctest: +SKIP
    ['llvmpipe (LLVM 15.0.6, 256 bits)']
    """
    return [Device(**d) for d in _tessera.devices()]


def set_memory_budget(bytes: int) -> None:
    """Sets the memory budget every input and allocation is checked against (bytes; the
    default is half of physical memory), as ``--max-memory`` does on the command line."""
    _tessera.set_memory_budget(int(bytes))


def memory_budget() -> int:
    """The memory budget in bytes."""
    return _tessera.memory_budget()


__all__ = [
    "Device",
    "DeviceError",
    "InvalidInputError",
    "MadMaps",
    "MadMetric",
    "MadResult",
    "MemoryBudgetError",
    "NoDeviceError",
    "TesseraError",
    "clear_cache",
    "composite",
    "lightfield",
    "mosaic",
    "smoe",
    "create_metric",
    "devices",
    "mad",
    "mad_batch",
    "memory_budget",
    "set_memory_budget",
]
