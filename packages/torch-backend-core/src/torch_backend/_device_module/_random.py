"""Random number generation: one default generator per device."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from torch_backend import _C
from torch_backend._device_module._devices import _index

__all__ = [
    "get_rng_state",
    "get_rng_state_all",
    "initial_seed",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "set_rng_state",
    "set_rng_state_all",
]


def manual_seed(seed: int) -> None:
    """Seed the current device's generator."""
    _C.manual_seed(_index(), int(seed) & 0xFFFF_FFFF_FFFF_FFFF)


def manual_seed_all(seed: int) -> None:
    """Seed every device's generator (torch.manual_seed calls this)."""
    for index in range(_C.device_count()):
        _C.manual_seed(index, int(seed) & 0xFFFF_FFFF_FFFF_FFFF)


def seed() -> None:
    """Seed the current device's generator with a non-deterministic random number."""
    _C.seed(_index())


def seed_all() -> None:
    """Seed every device's generator with one non-deterministic random number."""
    value = _C.seed(_index())
    manual_seed_all(value)


def initial_seed() -> int:
    return _C.initial_seed(_index())


def get_rng_state(device: Any = None) -> torch.Tensor:
    """The generator state of ``device`` (default: current) as a CPU ByteTensor."""
    index = _index(device)
    return torch.frombuffer(bytearray(_C.get_rng_state(index)), dtype=torch.uint8)


def set_rng_state(new_state: torch.Tensor, device: Any = None) -> None:
    if not isinstance(new_state, torch.Tensor) or new_state.dtype != torch.uint8:
        raise TypeError("RNG state must be a torch.ByteTensor")
    _C.set_rng_state(_index(device), bytes(new_state.cpu().flatten().tolist()))


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(index) for index in range(_C.device_count())]


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    for index, state in enumerate(new_states):
        set_rng_state(state, index)
