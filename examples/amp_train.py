"""Mixed-precision training on the active torch-backend device: `torch.autocast` and `GradScaler`.

    python examples/amp_train.py

Autocast runs the linear layers in float16 (CUDA's op lists: matrix multiplies in float16, losses
and reductions in float32) and the gradient scaler keeps small float16 gradients from vanishing.
Checks that the layers computed in float16, the loss in float32, and that the loss fell; exits
non-zero otherwise.
"""

from __future__ import annotations

import torch
from torch import nn


def main() -> None:
    device = torch.accelerator.current_accelerator()
    assert device is not None, "no accelerator: set TORCH_BACKEND=<name> of an installed backend"
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler(device.type)
    x, y = torch.randn(64, 32, device=device), torch.randint(0, 4, (64,), device=device)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        with torch.autocast(device.type, dtype=torch.float16):
            logits = model(x)
            loss = nn.functional.cross_entropy(logits, y)
        assert logits.dtype == torch.float16 and loss.dtype == torch.float32, (logits.dtype, loss.dtype)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        losses.append(loss.item())
    assert losses[-1] < 0.9 * losses[0], losses
    print(f"amp on {device}: loss {losses[0]:.3f} -> {losses[-1]:.3f}, scale {scaler.get_scale():.0f}: ok")


if __name__ == "__main__":
    main()
