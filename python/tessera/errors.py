"""The exceptions tessera raises.

Every failure is a :class:`TesseraError`. Bad input (a shape, dtype, range or size the call
cannot take, an unreadable file) is an :class:`InvalidInputError`, which is also a
``ValueError``; a size over the memory budget is a :class:`MemoryBudgetError`, one kind of
bad input. No Vulkan loader or no device matching ``device=`` is a :class:`NoDeviceError`;
a Vulkan failure or a device out of memory is a :class:`DeviceError`.
"""


class TesseraError(Exception):
    """Base class of every tessera error."""


class InvalidInputError(TesseraError, ValueError):
    """An input tessera cannot take: wrong shape, dtype, range or size, or an unreadable file."""


class MemoryBudgetError(InvalidInputError):
    """The work would need more memory than the budget (see ``tessera.set_memory_budget``)."""


class NoDeviceError(TesseraError):
    """No Vulkan loader, no Vulkan 1.3 device, or none matching ``device=``."""


class DeviceError(TesseraError):
    """A Vulkan call failed or the device ran out of memory."""


__all__ = ["TesseraError", "InvalidInputError", "MemoryBudgetError", "NoDeviceError", "DeviceError"]
