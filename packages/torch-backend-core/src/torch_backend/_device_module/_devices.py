"""Devices: count, selection, properties, synchronisation, lazy init."""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from torch_backend import _C

__all__ = [
    "DeviceProperties",
    "_is_in_bad_fork",
    "_lazy_init",
    "current_device",
    "device",
    "device_count",
    "device_of",
    "get_amp_supported_dtype",
    "get_device_capability",
    "get_device_name",
    "get_device_properties",
    "init",
    "is_available",
    "is_initialized",
    "set_device",
    "synchronize",
]

DeviceLike = Any  # torch.device | str | int | None


def _name() -> str:
    return torch._C._get_privateuse1_backend_name()


def _lazy_init() -> None:
    """Called by PyTorch before the first tensor on the device; refuses forked children."""
    if _C._in_bad_fork():
        name = _name()
        raise RuntimeError(
            f"Cannot re-initialize {name} in forked subprocess. To use {name} with "
            "multiprocessing, you must use the 'spawn' start method"
        )


def _is_in_bad_fork() -> bool:
    return _C._in_bad_fork()


def _index(device: DeviceLike = None) -> int:
    """Device index of ``device`` (None: the current device), like torch.cuda's _get_device_index."""
    _lazy_init()
    name = _name()
    if device is None:
        return _C.current_device()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != name:
            raise ValueError(f"Expected a {name} device, but got: {device}")
        return _C.current_device() if device.index is None else device.index
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    raise ValueError(f"Expected a {name} device (torch.device, str or int), but got: {device!r}")


class DeviceProperties(NamedTuple):
    """What the runtime reports about a device (immutable; torch.compile folds it as a constant)."""

    name: str
    total_memory: int
    capability: str  # the runtime's own words: "9.0", "Ascend910B", "fake-1.0"
    major: int = -1  # the capability as numbers where the hardware has them (CUDA's 9.0), else -1
    minor: int = -1
    multi_processor_count: int = 0  # compute units, where the runtime says
    # What GPU kernel compilers size launches by (Inductor's Triton heuristics); None where the runtime does not say.
    warp_size: int | None = None
    max_threads_per_block: int | None = None
    max_threads_per_multi_processor: int | None = None
    regs_per_multiprocessor: int | None = None


def is_available() -> bool:
    return _C.device_count() > 0


def is_initialized() -> bool:
    """Whether the device runtime has been used in this process (like torch.cuda.is_initialized)."""
    return _C._is_initialized()


def init() -> None:
    """Initialise the device runtime now rather than on first use."""
    _lazy_init()
    _C.current_device()


def device_count() -> int:
    return _C.device_count()


def current_device() -> int:
    _lazy_init()
    return _C.current_device()


def set_device(device: DeviceLike) -> None:
    index = _index(device)
    if index >= 0:
        _C.set_device(index)


def synchronize(device: DeviceLike = None) -> None:
    """Wait for all work on every stream of ``device``."""
    index = _index(device)
    if torch.autograd._profiler_enabled():
        # Shown in profiles, as CUDA's device synchronisation is.
        with torch.profiler.record_function(f"{_name()}.synchronize"):
            _C.synchronize(index)
    else:
        _C.synchronize(index)


def get_device_properties(device: DeviceLike = None) -> DeviceProperties:
    return DeviceProperties(**_C.device_properties(_index(device)))


def get_device_name(device: DeviceLike = None) -> str:
    return get_device_properties(device).name


def get_device_capability(device: DeviceLike = None) -> tuple[int, int]:
    """``(major, minor)``, as ``torch.cuda.get_device_capability``; an error where the runtime has no numbers."""
    props = get_device_properties(device)
    if props.major < 0:
        raise RuntimeError(
            f"{props.name} has no numeric capability; its runtime reports {props.capability!r} "
            "(get_device_properties().capability)"
        )
    return props.major, props.minor


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


class device:  # noqa: N801 - torch.cuda.device's name
    """Context manager that changes the current device, like ``torch.cuda.device``."""

    def __init__(self, device: DeviceLike) -> None:
        self.idx = _index(device) if device is not None else -1
        self.prev_idx = -1

    def __enter__(self) -> None:
        self.prev_idx = _C.current_device()
        if self.idx >= 0 and self.idx != self.prev_idx:
            _C.set_device(self.idx)

    def __exit__(self, *exc: object) -> None:
        if self.idx >= 0 and self.idx != self.prev_idx:
            _C.set_device(self.prev_idx)


class device_of(device):  # noqa: N801 - torch.cuda.device_of's name
    """Context manager selecting the device of ``obj`` (a device tensor), or doing nothing."""

    def __init__(self, obj: torch.Tensor) -> None:
        super().__init__(obj.device if obj.device.type == _name() else None)
