"""Refuses to run the suite unless the backend it was asked for is the active one."""

from __future__ import annotations

import os

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # Free device memory is a figure of the whole device: other processes on it (pytest-xdist workers)
    # move it. `-m "not device_alone"` in parallel, then `-m device_alone` alone, runs every test.
    config.addinivalue_line("markers", "device_alone: reads device-wide figures; no other process may use the device")
    import torch  # noqa: F401  (activates the backend TORCH_BACKEND names)

    from torch_backend import active_backend

    wanted = os.environ.get("TORCH_BACKEND")
    active = active_backend()
    if not wanted or active is None or active.name != wanted:
        raise pytest.UsageError(
            f"the conformance kit needs TORCH_BACKEND=<name> of an available backend (got {wanted!r}, "
            f"active: {active.name if active else None}); `python -m torch_backend` says why"
        )


def pytest_report_header(config: pytest.Config) -> str:
    from torch_backend.testing import device_count, device_type

    return f"torch-backend conformance kit: device '{device_type()}', {device_count()} device(s)"
