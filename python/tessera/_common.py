"""What every call shares: ``backend=`` and ``device=`` turned into the native module's
arguments, and one cached native object per (kind, backend, device), so that devices and
pipelines are set up once per process."""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence, TypeVar, Union

from .errors import InvalidInputError

Device = Union[None, int, str, Sequence[Union[int, str]]]

T = TypeVar("T")
_lock = threading.Lock()
_cache: dict = {}


def backend_name(backend: str) -> str:
    if backend not in ("gpu", "cpu"):
        raise InvalidInputError(f'backend must be "gpu" or "cpu"; got {backend!r}')
    return backend


def device_text(device: Device) -> "str | None":
    """``device=`` as the ``--device`` text: None, an index, a name substring, a list, "all"."""
    if device is None:
        return None
    if isinstance(device, bool):
        raise InvalidInputError(f"device must be an index, a name, a list of them or 'all'; got {device!r}")
    if isinstance(device, int):
        if device < 0:
            raise InvalidInputError(f"device index must be 0 or more; got {device}")
        return str(device)
    if isinstance(device, str):
        return device
    try:
        return ",".join(device_text(d) or "auto" for d in device)
    except TypeError:
        raise InvalidInputError(f"device must be an index, a name, a list of them or 'all'; got {device!r}") from None


def cached(kind: str, make: Callable[[str, "str | None"], T], backend: str, device: Device) -> T:
    """The native object ``make(backend, device)`` for this kind, made once per process."""
    key = (kind, backend_name(backend), device_text(device) if backend == "gpu" else None)
    with _lock:
        obj = _cache.get(key)
    if obj is None:
        obj = make(key[1], key[2])
        with _lock:
            obj = _cache.setdefault(key, obj)
    return obj


def clear_cache() -> None:
    """Drops every cached device and pipeline set (they are made again on next use)."""
    with _lock:
        _cache.clear()


def to_torch_like(values: Any, like: Any) -> Any:
    """``values`` as a torch tensor when ``like`` is one, else as they are."""
    if type(like).__module__.startswith("torch"):
        import torch

        return torch.as_tensor(values)
    return values


