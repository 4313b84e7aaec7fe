"""The `gpu` backend on an NVIDIA GPU: core's conformance kit, plus what only this backend has.

Needs a GPU (and the package built with the CUDA toolkit); elsewhere every test here skips,
saying why: the GPU machines run it, CI has none. Each check runs in a process of its own
with TORCH_BACKEND=gpu, whose exit status is asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from torch_backend import discover


def _gpu_availability() -> tuple[bool, str]:
    info = next((i for i in discover() if i.name == "gpu"), None)
    return (False, "torch-backend-cuda is not installed") if info is None else (info.available, info.reason)


AVAILABLE, REASON = _gpu_availability()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"the gpu backend is unavailable here: {REASON}")


def run(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    env = os.environ | {"TORCH_BACKEND": "gpu"}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout)


def test_conformance_kit_passes():
    kit = run("-m", "torch_backend.testing", "gpu", "-q", "-p", "no:warnings")
    assert kit.returncode == 0, kit.stdout[-20000:] + kit.stderr[-5000:]


def test_properties_carry_the_compute_capability():
    out = run(
        "-c",
        "import torch; p = torch.gpu.get_device_properties(0); "
        "print(p.major, p.minor, p.multi_processor_count, torch.gpu.get_device_capability(0))",
    )
    assert out.returncode == 0, out.stderr
    major, minor, processors, capability = out.stdout.split(maxsplit=3)
    assert int(major) >= 5 and int(processors) > 0
    assert capability.strip() == f"({major}, {minor})"


def test_staged_all_reduce_through_pinned_buffers():
    code = (
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group(store=dist.HashStore(), rank=0, world_size=1)\n"
        "t = torch.full((1 << 20,), 3.0, device='gpu')\n"
        "dist.all_reduce(t, op=dist.ReduceOp.AVG)\n"
        "assert torch.equal(t.cpu(), torch.full((1 << 20,), 3.0))\n"
        "dist.destroy_process_group()\n"
    )
    out = run("-c", code)
    assert out.returncode == 0, out.stderr
