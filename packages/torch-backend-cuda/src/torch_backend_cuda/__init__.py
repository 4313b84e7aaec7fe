"""The ``gpu`` device (NVIDIA, CUDA runtime, cuBLAS, cuDNN).

PyTorch reserves the name ``cuda``, so this backend's device is ``gpu``. Its
device library is built when the CUDA toolkit is present at build time; without
it, without an NVIDIA driver, or without cuBLAS, NCCL or cuDNN (the
``nvidia-cublas``, ``nvidia-nccl-cu13`` and ``nvidia-cudnn-cu13`` wheels this
package depends on), the backend reports itself unavailable. NCCL serves core's
native collectives (``"gpuccl"``); cuDNN its convolutions.
torch.compile generates Triton kernels for it with NVIDIA's Triton compiler
(where triton is installed), launched on gpu's current stream.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from torch_backend import Backend, TritonTarget

_LIBRARY = Path(__file__).resolve().parent / "lib" / "libtorch_backend_cuda.so"
# Loaded before the device library, in this order (cuBLAS needs cuBLASLt).
_CUBLAS = ("libcublasLt.so.13", "libcublas.so.13")
_NCCL = "libnccl.so.2"
# cuDNN's front library; it loads its engines from its own folder (RUNPATH $ORIGIN).
_CUDNN = "libcudnn.so.9"


def cublas_directory() -> Path | None:
    """The folder of the nvidia-cublas wheel's libraries, if that wheel is installed."""
    spec = importlib.util.find_spec("nvidia")
    for root in spec.submodule_search_locations if spec is not None else []:
        folder = Path(root) / "cu13" / "lib"
        if all((folder / name).is_file() for name in _CUBLAS):
            return folder
    return None


def _nvidia_wheel_library(relative: str) -> Path | None:
    """A library of an nvidia-* wheel (``relative`` to the ``nvidia`` package), if that wheel is installed."""
    spec = importlib.util.find_spec("nvidia")
    for root in spec.submodule_search_locations if spec is not None else []:
        library = Path(root) / relative
        if library.is_file():
            return library
    return None


def nccl_library() -> Path | None:
    """NCCL from the nvidia-nccl-cu13 wheel, if that wheel is installed."""
    return _nvidia_wheel_library(f"nccl/lib/{_NCCL}")


def cudnn_library() -> Path | None:
    """cuDNN 9 from the nvidia-cudnn-cu13 wheel, if that wheel is installed."""
    return _nvidia_wheel_library(f"cudnn/lib/{_CUDNN}")


def _probe() -> tuple[bool, str]:
    # Runs at every `import torch`: file checks only, no subprocess, no loading.
    if not os.path.exists("/dev/nvidiactl") and not os.path.exists("/proc/driver/nvidia/version"):
        return False, "no NVIDIA driver found (/dev/nvidiactl, /proc/driver/nvidia/version)"
    if not _LIBRARY.is_file():
        return False, "NVIDIA driver found, but this build has no device library (built without the CUDA toolkit)"
    if cublas_directory() is None:
        return False, "cuBLAS 13 not found (the nvidia-cublas wheel: pip install nvidia-cublas)"
    if nccl_library() is None:
        return False, "NCCL not found (the nvidia-nccl-cu13 wheel: pip install nvidia-nccl-cu13)"
    if cudnn_library() is None:
        return False, "cuDNN 9 not found (the nvidia-cudnn-cu13 wheel: pip install nvidia-cudnn-cu13)"
    return True, "NVIDIA driver, device library, cuBLAS, NCCL and cuDNN found"


def _runtime_libraries() -> list[Path]:
    # The library's RUNPATH finds these beside it in site-packages; loading them
    # first also serves editable installs and other layouts.
    folder, nccl, cudnn = cublas_directory(), nccl_library(), cudnn_library()
    if folder is None or nccl is None or cudnn is None:
        raise RuntimeError(
            "cuBLAS 13, NCCL or cuDNN 9 (the nvidia-cublas, nvidia-nccl-cu13 and nvidia-cudnn-cu13 wheels) "
            "is no longer found"
        )
    return [*(folder / name for name in _CUBLAS), nccl, cudnn]


backend = Backend(
    name="gpu",
    library=_LIBRARY,
    priority=20,
    probe=_probe,
    description="NVIDIA GPU (CUDA runtime, cuBLAS, NCCL, cuDNN)",
    runtime_libraries=_runtime_libraries,
    # The architecture is the device's compute capability (major * 10 + minor).
    triton=TritonTarget(vendor="nvidia"),
)
