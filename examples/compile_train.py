"""`torch.compile` on the active torch-backend device: a compiled training step against the eager one.

    python examples/compile_train.py

The compiled model is trained three steps beside an identical eager one; their losses and
parameters must agree (float32 rounding aside); exits non-zero otherwise. What Inductor generates
depends on the backend (Triton kernels, C++ kernels on host-addressable memory, or the backend's
own kernels with `backend="<device>"`): the user guide's compile section has the table.
"""

from __future__ import annotations

import copy

import torch
from torch import nn


def main() -> None:
    device = torch.accelerator.current_accelerator()
    assert device is not None, "no accelerator: set TORCH_BACKEND=<name> of an installed backend"
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)).to(device)
    compiled_model = copy.deepcopy(eager)
    compiled = torch.compile(compiled_model)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (eager, compiled_model)]
    x, y = torch.randn(8, 16, device=device), torch.randn(8, 4, device=device)
    for step in range(3):
        losses = []
        for model, optimizer in zip((eager, compiled), optimizers, strict=True):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        assert abs(losses[0] - losses[1]) < 1e-5, (step, losses)
    for a, b in zip(eager.parameters(), compiled_model.parameters(), strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)
    print(f"compiled on {device}: losses {losses[1]:.5f} (eager {losses[0]:.5f}): ok")


if __name__ == "__main__":
    main()
