"""The benchmark cases and their targets (device / CPU)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from torch_backend.bench._runner import Case


def _alloc_free(device: torch.device) -> Callable[[], object]:
    def run() -> None:
        for _ in range(10_000):
            x = torch.empty(256, dtype=torch.float32, device=device)  # 1 KiB
            del x

    return run


CASES = [
    Case("alloc+free 1 KiB x10000", _alloc_free, target=1.0, description="time, device / CPU"),
]
