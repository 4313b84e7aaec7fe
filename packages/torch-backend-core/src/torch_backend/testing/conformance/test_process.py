"""A process that used the device ends with its own exit status, with device work still queued."""

from __future__ import annotations

import subprocess
import sys

import pytest

from torch_backend.testing.conformance._support import DEVICE

RUNS = 5


@pytest.mark.parametrize("status", [0, 3])
def test_training_process_exits_with_its_own_status(status: int) -> None:
    # The last step's work may still be queued on the device's streams at
    # exit: it must neither hang nor abort the process.
    code = (
        "import torch\n"
        "model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))\n"
        f"model = model.to('{DEVICE}')\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for _ in range(5):\n"
        "    opt.zero_grad()\n"
        f"    model(torch.randn(16, 32, device='{DEVICE}')).square().mean().backward()\n"
        "    opt.step()\n"
        f"raise SystemExit({status})\n"
    )
    for _ in range(RUNS):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert done.returncode == status, done.stderr
