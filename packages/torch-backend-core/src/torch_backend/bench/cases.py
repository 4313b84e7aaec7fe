"""The benchmark cases and their targets (device vs CPU, side by side).

Each ``make(device)`` prepares inputs once and returns the callable that is
timed; the device is synchronised before each clock read by the runner.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from torch_backend.bench._runner import Case

Timed = Callable[[], object]
MiB = 1 << 20


def _add_small(device: torch.device) -> Timed:
    x, y = torch.randn(16, device=device), torch.randn(16, device=device)

    def run() -> None:
        for _ in range(10_000):
            torch.add(x, y)

    return run


def _chain(device: torch.device) -> Timed:
    x = torch.randn(16, device=device)

    def run() -> None:
        for _ in range(1_000):
            y = x.mul(2).add(1).sin().cos().exp().neg().abs().sqrt().relu().sub(0.5)
        return y

    return run


def _add_large(device: torch.device) -> Timed:
    x, y = torch.randn(16 * MiB, device=device), torch.randn(16 * MiB, device=device)
    out = torch.empty_like(x)
    return lambda: torch.add(x, y, out=out)


def _copy(direction: str, pinned: bool) -> Callable[[torch.device], Timed]:
    """64 MiB copies; the CPU side of the ratio is the same copy_ between CPU tensors."""

    def make(device: torch.device) -> Timed:
        host = torch.randn(16 * MiB)
        if pinned and device.type != "cpu":
            host = host.pin_memory()
        if device.type == "cpu":
            other = torch.empty_like(host)
            return lambda: other.copy_(host)
        target = torch.empty(16 * MiB, device=device)
        if direction == "h2d":
            return lambda: target.copy_(host, non_blocking=pinned)
        if direction == "d2h":
            return lambda: host.copy_(target, non_blocking=pinned)
        other = torch.empty_like(target)
        return lambda: other.copy_(target)

    return make


def _alloc_free(device: torch.device) -> Timed:
    def run() -> None:
        for _ in range(10_000):
            x = torch.empty(256, dtype=torch.float32, device=device)  # 1 KiB
            del x

    return run


def _matmul(device: torch.device) -> Timed:
    a, b = torch.randn(512, 512, device=device), torch.randn(512, 512, device=device)

    def run() -> None:
        for _ in range(10):
            torch.mm(a, b)

    return run


def _mlp_step(device: torch.device) -> Timed:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10),
    ).to(device)  # fmt: skip
    # foreach=False on both sides: PrivateUse1 would otherwise take the foreach path and CPU not.
    opt = torch.optim.SGD(model.parameters(), lr=0.01, foreach=False)
    x, y = torch.randn(64, 784, device=device), torch.randint(0, 10, (64,), device=device)

    def run() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return run


CASES = [
    Case("add, 16 elements x10000", _add_small, target=1.5, description="time, device / CPU"),
    Case("10-op chain x1000", _chain, target=1.5, description="time, device / CPU"),
    Case("add, 16M elements", _add_large, target=0.9, lower_is_better=False, description="throughput"),
    Case("H2D 64 MiB pageable", _copy("h2d", False), target=0.8, lower_is_better=False),
    Case("H2D 64 MiB pinned", _copy("h2d", True), target=0.8, lower_is_better=False),
    Case("D2H 64 MiB pageable", _copy("d2h", False), target=0.8, lower_is_better=False),
    Case("D2H 64 MiB pinned", _copy("d2h", True), target=0.8, lower_is_better=False),
    Case("D2D 64 MiB", _copy("d2d", False), target=0.8, lower_is_better=False),
    Case("alloc+free 1 KiB x10000", _alloc_free, target=1.0, description="time, device / CPU"),
    Case("matmul 512 x10", _matmul, target=0.9, lower_is_better=False, description="throughput"),
    Case("MLP train step", _mlp_step, target=1.15, description="time, device / CPU"),
]
