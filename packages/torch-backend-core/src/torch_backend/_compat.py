"""The differences between the torch releases core supports, in one place.

Everything else in the Python package is written against one API and asks
here where releases differ (C++'s counterpart: ``csrc/aten/TorchCompat.h``).
Nothing here imports torch at module level: discovery runs during
``import torch``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The torch releases (major, minor) core builds and is tested against, inclusive.
SUPPORTED_TORCH = ((2, 11), (2, 15))
#: What the build hook (torch_backend/_build) writes into every compiled package.
BUILD_INFO = "_build_info.json"


def _release(version: str) -> tuple[int, int]:
    major, minor = version.split("+")[0].split(".")[:2]
    return int(major), int(minor)


@functools.cache
def installed_torch() -> str:
    """The installed torch's version string, read without importing torch.

    Cached: discovery asks once per compiled package at every ``import torch``,
    and each metadata lookup scans sys.path (about 1.5 ms).
    """
    return importlib.metadata.version("torch")


def torch_release() -> tuple[int, int]:
    """(major, minor) of the installed torch."""
    return _release(installed_torch())


def torch_at_least(major: int, minor: int) -> bool:
    return torch_release() >= (major, minor)


def built_for(package_dir: Path) -> str | None:
    """The torch release a compiled package was built against; None for pure-Python packages."""
    try:
        return str(json.loads((Path(package_dir) / BUILD_INFO).read_text())["torch"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError) as error:
        return f"unreadable ({error})"


def build_mismatch(package: str, package_dir: Path) -> str | None:
    """Why ``package`` (compiled) cannot load into the installed torch, or None if it can.

    Compiled packages bind to the C++ ABI of the torch they were built
    against, which changes with every minor release.
    """
    built = built_for(package_dir)
    if built is None:
        return None
    running = installed_torch()
    try:
        if _release(built) == _release(running):
            return None
    except ValueError:
        pass
    return (
        f"{package} was built for torch {built}, but torch {running} is installed: install the "
        f"{package} build for torch {running.split('+')[0]}, or rebuild it from source against this torch "
        "(pip install --no-build-isolation ...)"
    )


def unsupported_torch() -> str | None:
    """Why the installed torch is outside the supported range, or None."""
    low, high = SUPPORTED_TORCH
    release = torch_release()
    if low <= release <= high:
        return None
    return (
        f"torch {installed_torch()} is not supported by torch-backend "
        f"(supported: {low[0]}.{low[1]} to {high[0]}.{high[1]})"
    )


def has_privateuse1_profiler_registry() -> bool:
    """torch >= 2.13 lets a PrivateUse1 backend hand device activity to the profiler (Kineto)."""
    return torch_at_least(2, 13)


def single_tensor_collectives() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """torch.distributed's (all_gather_single, reduce_scatter_single).

    torch 2.13 introduced those names (deprecating all_gather_into_tensor and
    reduce_scatter_tensor); 2.11 and 2.12 have only the old ones.
    """
    import torch.distributed as dist

    if torch_at_least(2, 13):
        return dist.all_gather_single, dist.reduce_scatter_single
    return dist.all_gather_into_tensor, dist.reduce_scatter_tensor


def flight_recorder_analyser_knows(library: str) -> bool:
    """Whether this torch's flight-recorder analyser (fr_trace) reads ops named ``<library>:...``.

    torch 2.11's knows only nccl and xccl; 2.13's also hccl, gloo, rccl, mccl and others.
    """
    return library in ("nccl", "xccl") or torch_at_least(2, 13)


def split_group_serves_other_devices() -> bool:
    """Whether torch.distributed.split_group splits the current accelerator's backend: from torch 2.13
    (measured on 2.13 and 2.15; 2.11 asks the parent group for its CUDA backend, 2.12 is not checked)."""
    return torch_at_least(2, 13)


def gloo_has_list_all_to_all() -> bool:
    """Whether all_to_all over lists of tensors works on staged (Gloo-backed) groups: from torch 2.12."""
    return torch_at_least(2, 12)


def inductor_last_pass_takes_wrapper_lines() -> bool:
    """Whether Inductor's wrapper code generator takes wrapper lines (a device guard's) from
    ``writeline`` in its last pass, where kernel calls are written: from torch 2.13 (checked on
    2.13 and 2.15; 2.11 takes text only there; 2.12 is not checked)."""
    return torch_at_least(2, 13)
