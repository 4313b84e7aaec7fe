"""The ``gpu`` device (NVIDIA, CUDA runtime). Skeleton: device symbols come later.

PyTorch reserves the name ``cuda``, so this backend's device is ``gpu``. Until
its device library exists it reports itself unavailable, with the reason.
"""

import ctypes.util
import os
from pathlib import Path

from torch_backend import Backend


def _probe() -> tuple[bool, str]:
    if ctypes.util.find_library("cuda") is None and not os.path.exists("/dev/nvidiactl"):
        return False, "no NVIDIA driver found (libcuda.so, /dev/nvidiactl)"
    return False, "NVIDIA driver found, but this torch-backend-cuda build has no device library yet"


backend = Backend(
    name="gpu",
    library=Path(__file__).resolve().parent / "lib" / "libtorch_backend_cuda.so",
    priority=20,
    probe=_probe,
    description="NVIDIA GPU (CUDA runtime)",
)
