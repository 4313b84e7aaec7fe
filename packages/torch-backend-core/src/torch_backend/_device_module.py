"""The ``torch.<device>`` module core generates for whichever backend is active.

Names and semantics follow ``torch.cuda`` where they make sense.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

import torch

from torch_backend import _C


@dataclass(frozen=True)
class DeviceProperties:
    name: str
    total_memory: int
    capability: str


def make_device_module(device_name: str) -> types.ModuleType:
    """Build the module registered as ``torch.<device_name>``."""
    module = types.ModuleType(f"torch.{device_name}", f"PyTorch device module for '{device_name}' (torch-backend).")

    def _index(device: Any = None, optional: bool = True) -> int:
        """Device index of ``device`` (None: current device), as torch.cuda's _get_device_index."""
        if device is None:
            if not optional:
                raise ValueError(f"Expected a {device_name} device, but got None")
            return _C.current_device()
        if isinstance(device, str):
            device = torch.device(device)
        if isinstance(device, torch.device):
            if device.type != device_name:
                raise ValueError(f"Expected a {device_name} device, but got: {device}")
            return _C.current_device() if device.index is None else device.index
        if isinstance(device, int) and not isinstance(device, bool):
            return device
        raise ValueError(f"Expected a {device_name} device (torch.device, str or int), but got: {device!r}")

    def is_available() -> bool:
        return _C.device_count() > 0

    def is_initialized() -> bool:
        return _C._is_active()

    def init() -> None:
        """Devices are initialised when the backend is activated; kept for torch.cuda parity."""

    def device_count() -> int:
        return _C.device_count()

    def current_device() -> int:
        return _C.current_device()

    def set_device(device: Any) -> None:
        index = _index(device)
        if index >= 0:
            _C.set_device(index)

    def synchronize(device: Any = None) -> None:
        _C.synchronize(_index(device))

    def get_device_properties(device: Any = None) -> DeviceProperties:
        return DeviceProperties(**_C.device_properties(_index(device)))

    def get_device_name(device: Any = None) -> str:
        return get_device_properties(device).name

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        return tuple(_C.mem_get_info(_index(device)))

    def get_amp_supported_dtype() -> list[torch.dtype]:
        return [torch.float16, torch.bfloat16]

    class device:  # noqa: N801 - torch.cuda.device's name
        """Context manager that changes the current device, like ``torch.cuda.device``."""

        def __init__(self, device: Any) -> None:
            self.idx = _index(device)
            self.prev_idx = -1

        def __enter__(self) -> None:
            self.prev_idx = _C.current_device()
            if self.idx >= 0 and self.idx != self.prev_idx:
                _C.set_device(self.idx)

        def __exit__(self, *exc: object) -> None:
            if self.idx >= 0 and self.idx != self.prev_idx:
                _C.set_device(self.prev_idx)

    for fn in (is_available, is_initialized, init, device_count, current_device, set_device, synchronize,
               get_device_properties, get_device_name, mem_get_info, get_amp_supported_dtype):  # fmt: skip
        fn.__module__ = module.__name__
        setattr(module, fn.__name__, fn)
    device.__module__ = module.__name__
    module.device = device
    module.DeviceProperties = DeviceProperties
    return module
