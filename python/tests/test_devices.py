import pytest

import tessera


def test_devices_lists_at_least_one_vulkan_device():
    devices = tessera.devices()
    assert devices, "no Vulkan device listed"
    for i, d in enumerate(devices):
        assert d.index == i and d.name and d.memory_bytes > 0 and d.subgroup_size > 0
    if not any(d.type in ("discrete", "integrated", "DISCRETE_GPU", "INTEGRATED_GPU") for d in devices):
        assert any("llvmpipe" in d.name for d in devices)


def test_unknown_device_raises_no_device_error_listing_the_devices():
    with pytest.raises(tessera.NoDeviceError, match="device=") as e:
        tessera.mad_batch([], [], device="no-such-gpu-anywhere")
    assert tessera.devices()[0].name.split()[0] in str(e.value)


def test_bad_backend_and_device_values_are_value_errors():
    with pytest.raises(ValueError, match="backend"):
        tessera.mad_batch([], [], backend="tpu")
    with pytest.raises(tessera.InvalidInputError):
        tessera.mad_batch([], [], device=-1)


def test_memory_budget_round_trips():
    old = tessera.memory_budget()
    try:
        tessera.set_memory_budget(123456789)
        assert tessera.memory_budget() == 123456789
        with pytest.raises(ValueError):
            tessera.set_memory_budget(0)
    finally:
        tessera.set_memory_budget(old)
