"""torch-backend core: turns a device library of device symbols into a PyTorch device.

Importing this package is cheap and does not import torch: PyTorch's autoload
imports it at the end of ``import torch``.
"""

from __future__ import annotations

from pathlib import Path

from torch_backend._activation import activate, active_backend
from torch_backend._backend import Backend, BackendInfo, TritonTarget
from torch_backend._compile.codegen import InductorCodegen
from torch_backend._discovery import ENTRY_POINT_GROUP, discover
from torch_backend._op_report import OpCount, OpReport, op_report
from torch_backend._tensor_metadata import set_tensor_metadata, tensor_metadata

__version__ = "0.1.0"


#: Prefix for CMake's find_package(TorchBackendCore), like torch.utils.cmake_prefix_path.
cmake_prefix_path = str(Path(__file__).resolve().parent)

__all__ = [
    "ENTRY_POINT_GROUP",
    "AutocompareError",
    "Backend",
    "BackendInfo",
    "InductorCodegen",
    "OpCount",
    "OpReport",
    "TritonTarget",
    "activate",
    "active_backend",
    "autocompare",
    "cmake_prefix_path",
    "discover",
    "op_report",
    "set_tensor_metadata",
    "tensor_metadata",
]


# Auto-compare imports torch: loaded on first use, so importing this package stays cheap.
_LAZY = ("autocompare", "AutocompareError")


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from torch_backend import _autocompare

        return getattr(_autocompare, name)
    raise AttributeError(f"module 'torch_backend' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
