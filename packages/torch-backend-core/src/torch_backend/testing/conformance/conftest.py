"""Refuses to run the suite unless the backend it was asked for is the active one; the kit's fixtures."""

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


@pytest.fixture
def strict_float32_convolutions():
    """float32 convolutions without TF32 for the test (PyTorch allows TF32 in them by default, and a backend
    that honours torch.backends.cudnn.allow_tf32, as gpu's cuDNN does, then differs from the CPU by 1e-3),
    as PyTorch's own CUDA tests compare them. Set through the setter behind that attribute: importing
    torch.testing._internal (the OpInfo tests do) forbids assigning torch.backends' flags directly."""
    import torch

    allowed = torch._C._get_cudnn_allow_tf32()
    torch._C._set_cudnn_allow_tf32(False)
    yield
    torch._C._set_cudnn_allow_tf32(allowed)
