"""Three SGD steps of a small gated MLP on the active backend and on CPU: do the parameters match?

The bring-up walk-through (docs/bringing-up-a-device.md) runs it on a scaffolded backend whose
`mul` kernel was written as `add`, and ci/check_wheels.py does the same in CI.
"""

from __future__ import annotations

import torch

import torch_backend


def train(device: str) -> list[torch.Tensor]:
    torch.manual_seed(0)
    first, second = torch.nn.Linear(8, 16).to(device), torch.nn.Linear(16, 1).to(device)
    parameters = [*first.parameters(), *second.parameters()]
    optimizer = torch.optim.SGD(parameters, lr=0.1)
    inputs = torch.Generator().manual_seed(1)
    for _ in range(3):
        hidden = first(torch.randn(4, 8, generator=inputs).to(device))
        gated = hidden * torch.sigmoid(hidden)  # SiLU written out: mul of two 4x16 tensors
        loss = (second(gated) - 1).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return [p.detach().cpu() for p in parameters]


if __name__ == "__main__":
    backend = torch_backend.active_backend()
    assert backend is not None, "no torch-backend device is active"
    gap = max((a - b).abs().max().item() for a, b in zip(train(backend.name), train("cpu"), strict=True))
    verdict = "match CPU" if gap < 1e-5 else "differ from CPU"
    print(f"{backend.name}: the trained parameters {verdict} (largest difference {gap:.3g})")
