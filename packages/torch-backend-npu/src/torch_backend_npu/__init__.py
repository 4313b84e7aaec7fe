"""The ``npu`` device (Huawei Ascend, ACL runtime). Skeleton: device symbols come later.

Until its device library exists this backend reports itself unavailable, with
the reason, and is never activated.
"""

import os
from pathlib import Path

from torch_backend import Backend


def _probe() -> tuple[bool, str]:
    # Runs at every `import torch`: file checks only, no subprocess (ctypes.util.find_library spawns one).
    home = os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME")
    if home is None and not os.path.isdir("/usr/local/Ascend"):
        return False, "Ascend ACL runtime (libascendcl.so) not found; install CANN and source its set_env.sh"
    return False, "ACL runtime found, but this torch-backend-npu build has no device library yet"


backend = Backend(
    name="npu",
    library=Path(__file__).resolve().parent / "lib" / "libtorch_backend_npu.so",
    priority=30,
    probe=_probe,
    description="Huawei Ascend NPU (ACL runtime)",
)
