"""The ``gpu`` device (NVIDIA, CUDA runtime). Skeleton: device symbols come later.

PyTorch reserves the name ``cuda``, so this backend's device is ``gpu``. Until
its device library exists it reports itself unavailable, with the reason.
"""

import os
from pathlib import Path

from torch_backend import Backend


def _probe() -> tuple[bool, str]:
    # Runs at every `import torch`: file checks only, no subprocess.
    if not os.path.exists("/dev/nvidiactl") and not os.path.exists("/proc/driver/nvidia/version"):
        return False, "no NVIDIA driver found (/dev/nvidiactl, /proc/driver/nvidia/version)"
    return False, "NVIDIA driver found, but this torch-backend-cuda build has no device library yet"


backend = Backend(
    name="gpu",
    library=Path(__file__).resolve().parent / "lib" / "libtorch_backend_cuda.so",
    priority=20,
    probe=_probe,
    description="NVIDIA GPU (CUDA runtime)",
)
