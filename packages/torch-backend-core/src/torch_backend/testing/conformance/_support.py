"""What the suite's test files share: the device under test and skips for optional features."""

from __future__ import annotations

import pytest

from torch_backend.testing import device_count, device_module, device_type, stream_sleep_supported

#: The device type under test ("fake", "npu", ...) and its torch.<device> module.
DEVICE = device_type()
dev = device_module()

needs_two_devices = pytest.mark.skipif(device_count() < 2, reason="needs two devices")
# Asynchrony is only observable with work that takes time: the runtime's optional stream_sleep.
needs_stream_sleep = pytest.mark.skipif(
    not stream_sleep_supported(), reason="the runtime has no stream_sleep (optional)"
)
SLEEP_US = 200_000  # long enough that "still running" is observable, short for CI


def on(index: int | None = None) -> str:
    """The device string of device ``index`` ("fake:1"), or the bare type."""
    return DEVICE if index is None else f"{DEVICE}:{index}"
