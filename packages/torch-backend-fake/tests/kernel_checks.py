"""What fake's kernel tests share: the guard that they run with device kernels on, the comparison with
the CPU (tensors moved with on_fake), and the check that code runs on the kernels alone.

Imported by test_kernels.py and test_kernels_elementwise.py, which `nox -s tests-fake-discrete` runs
with TORCH_BACKEND_FAKE_KERNELS=1 (with discrete memory, the path npu and gpu take); without kernels
they fail at import rather than passing vacuously.
"""

from __future__ import annotations

import os
import subprocess
import sys

import torch

KERNELS_ON = os.environ.get("TORCH_BACKEND_FAKE_KERNELS") == "1"
if not KERNELS_ON:
    raise RuntimeError("fake's kernel tests need TORCH_BACKEND_FAKE_KERNELS=1 (nox -s tests-fake-discrete sets it)")


def same(device_result: torch.Tensor, cpu_result: torch.Tensor) -> None:
    assert device_result.device.type == "fake"
    torch.testing.assert_close(device_result.cpu(), cpu_result, equal_nan=True)


def on_fake(*tensors: torch.Tensor) -> list[torch.Tensor]:
    return [t.to("fake") for t in tensors]


def assert_runs_on_kernels_alone(code: str) -> None:
    """Runs ``code`` in a process where any fallback is an error (its calls are then the kernels'); it must
    print "ok"."""
    env = {**os.environ, "TORCH_BACKEND_FALLBACK": "error"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
