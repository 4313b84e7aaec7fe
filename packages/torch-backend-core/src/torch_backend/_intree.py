"""PyTorch's own accelerator (CUDA, ROCm, XPU, MPS, ...) and whether it is usable here.

PyTorch serves one accelerator type per process, and a registered PrivateUse1
device takes precedence over the in-tree one (pytorch/pytorch#161129): with a
backend active, autograd's backward through CUDA tensors fails and
``torch.accelerator`` means the backend. So a backend is activated implicitly
only where PyTorch's accelerator is not usable.

Probing never initialises a device (a process stays safe to fork): the
accelerator type is fixed when torch is built, and CUDA/ROCm devices are counted
through the driver's management library (NVML / amdsmi), as PyTorch does under
``PYTORCH_NVML_BASED_CUDA_CHECK=1``.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass


@dataclass(frozen=True)
class InTreeAccelerator:
    """PyTorch's own accelerator type and what probing learnt about it."""

    device_type: str
    usable: bool
    detail: str


@functools.cache
def in_tree_accelerator() -> InTreeAccelerator | None:
    """The accelerator this torch was built with; None for a CPU-only build.

    Cached from the first call, which autoload or activation makes before a
    backend registers PrivateUse1 (a registered one takes over ``torch.accelerator``).
    """
    import torch

    try:
        device = torch.accelerator.current_accelerator()
    except Exception:
        return None
    if device is None or device.type == "privateuseone" or device.type == torch._C._get_privateuse1_backend_name():
        return None
    usable, detail = _probe(device.type)
    return InTreeAccelerator(device.type, usable, detail)


def usable_in_tree_accelerator() -> InTreeAccelerator | None:
    """PyTorch's own accelerator if it has a device here, else None."""
    accelerator = in_tree_accelerator()
    return accelerator if accelerator is not None and accelerator.usable else None


def _probe(device_type: str) -> tuple[bool, str]:
    import torch

    try:
        if device_type == "cuda":
            return _count_cuda_devices(torch)
        if device_type == "mps":
            return (True, "MPS available") if torch.backends.mps.is_available() else (False, "MPS not available")
        if device_type == "xpu":  # counts SYCL devices; initialises no context
            count = torch.xpu.device_count()
            return count > 0, f"{count} device{'s' if count != 1 else ''}"
    except Exception as error:
        return True, f"could not be probed ({type(error).__name__}: {error}); assumed usable"
    # A type without a probe that is safe before fork: assume usable, so the
    # user's own accelerator is never taken over silently.
    return True, "built in; not probed (assumed usable)"


def _count_cuda_devices(torch) -> tuple[bool, str]:  # noqa: ANN001 (the torch module)
    rocm = torch.version.hip is not None
    library = "amdsmi" if rocm else "NVML"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Can't initialize NVML" where no driver is installed
        count = torch.cuda._device_count_amdsmi() if rocm else torch.cuda._device_count_nvml()
    if count < 0:
        # The management library ships with the driver: without it no GPU can run.
        return False, f"no {'ROCm' if rocm else 'NVIDIA'} driver ({library} could not be loaded or initialised)"
    plural = "s" if count != 1 else ""
    return count > 0, f"{count} visible device{plural} (counted by {library})"
