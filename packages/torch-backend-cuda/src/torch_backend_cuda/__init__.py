"""The ``gpu`` device (NVIDIA, CUDA runtime).

PyTorch reserves the name ``cuda``, so this backend's device is ``gpu``. Its
device library is built when the CUDA toolkit is present at build time; without
it, or without an NVIDIA driver, the backend reports itself unavailable.
"""

import os
from pathlib import Path

from torch_backend import Backend

_LIBRARY = Path(__file__).resolve().parent / "lib" / "libtorch_backend_cuda.so"


def _probe() -> tuple[bool, str]:
    # Runs at every `import torch`: file checks only, no subprocess.
    if not os.path.exists("/dev/nvidiactl") and not os.path.exists("/proc/driver/nvidia/version"):
        return False, "no NVIDIA driver found (/dev/nvidiactl, /proc/driver/nvidia/version)"
    if not _LIBRARY.is_file():
        return False, "NVIDIA driver found, but this build has no device library (built without the CUDA toolkit)"
    return True, "NVIDIA driver and device library found"


backend = Backend(
    name="gpu",
    library=_LIBRARY,
    priority=20,
    probe=_probe,
    description="NVIDIA GPU (CUDA runtime)",
)
