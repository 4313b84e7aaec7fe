"""A backend's per-tensor metadata from Python (C++: torch_backend/TensorMetadata.h).

Named integers on a device tensor (a private memory format number and the like),
read and written through PyTorch's own hooks (``torch._C._get_tensor_metadata``,
the string -> bool map ``torch.save`` stores): 0 and 1 travel as flags
(``{"name": False/True}``), other numbers as ``{"name=value": True}``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

_PYTORCH_OWN = ("conj", "neg")


def tensor_metadata(tensor: torch.Tensor) -> dict[str, int]:
    """The backend metadata of ``tensor`` (empty for CPU tensors and tensors without any)."""
    import torch

    values: dict[str, int] = {}
    for key, flag in torch._C._get_tensor_metadata(tensor).items():
        if key in _PYTORCH_OWN:
            continue
        name, equals, digits = key.rpartition("=")
        if equals and digits.lstrip("-").isdigit():
            values[name] = int(digits)
        else:
            values[key] = int(flag)
    return values


def set_tensor_metadata(tensor: torch.Tensor, name: str, value: int) -> None:
    """Sets ``name`` to the integer ``value`` on the device tensor ``tensor``."""
    import torch

    if tensor.device.type != torch._C._get_privateuse1_backend_name():
        raise ValueError(f"backend metadata is kept on device tensors only, not on {tensor.device} tensors")
    if not name or "=" in name or name in _PYTORCH_OWN:
        raise ValueError(f"invalid backend metadata name {name!r} (empty, containing '=', or one of conj, neg)")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"backend metadata values are integers, got {type(value).__name__}")
    key = name if value in (0, 1) else f"{name}={value}"
    torch._C._set_tensor_metadata(tensor, {key: value != 0})
