"""Train a small classifier on the active torch-backend device and show where it ran.

No backend import is needed: torch-backend-core activates the best installed
backend at `import torch` (the fake device on a machine without accelerators).
"""

from __future__ import annotations

import torch
from torch import nn

import torch_backend


def main(steps: int = 20) -> None:
    backend = torch_backend.active_backend()
    if backend is None:
        raise SystemExit("no torch-backend device is active (is a backend installed? TORCH_BACKEND=none?)")
    device = torch.device(backend.name, 0)
    print(f"backend: {backend.name} ({backend.description}), device: {device}")
    print(f"device name: {getattr(torch, backend.name).get_device_name(device)}")

    torch.manual_seed(0)  # seeds the CPU and every device generator
    # A two-class problem: is the sum of the features positive?
    features = torch.randn(256, 16)
    labels = (features.sum(dim=1) > 0).long()
    features, labels = features.to(device), labels.to(device)

    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(1, steps + 1):
        optimizer.zero_grad()
        loss = loss_fn(model(features), labels)
        loss.backward()
        optimizer.step()
        if step == 1 or step % 5 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}")

    accuracy = (model(features).argmax(dim=1) == labels).float().mean().item()
    where = {p.device for p in model.parameters()}
    print(f"accuracy {accuracy:.3f}; parameters on {sorted(map(str, where))}; output on {model(features).device}")


if __name__ == "__main__":
    main()
