"""The ``npu`` device (Huawei Ascend): device symbols over the ACL runtime, kernels over aclnn, collectives over HCCL.

The CANN installation is found at run time as CANN's ``set_env.sh`` describes
it: ``ASCEND_HOME_PATH`` or ``ASCEND_TOOLKIT_HOME``, else
``/usr/local/Ascend/ascend-toolkit/latest``. Its runtime libraries are loaded
just before the device library, which resolves the ACL calls against them.
"""

import os
from pathlib import Path

from torch_backend import Backend

_LIBRARY = Path(__file__).resolve().parent / "lib" / "libtorch_backend_npu.so"
_DEFAULT_HOME = "/usr/local/Ascend/ascend-toolkit/latest"
# ACL's runtime, the aclnn descriptors, the aclnn operators, HCCL.
_RUNTIME_LIBRARIES = ("libascendcl.so", "libnnopbase.so", "libopapi.so", "libhccl.so")


def toolkit_home() -> Path | None:
    """The CANN installation this process would use, if any."""
    for candidate in (os.environ.get("ASCEND_HOME_PATH"), os.environ.get("ASCEND_TOOLKIT_HOME"), _DEFAULT_HOME):
        if candidate and (Path(candidate) / "lib64" / "libascendcl.so").is_file():
            return Path(candidate)
    return None


def _probe() -> tuple[bool, str]:
    # Runs at every `import torch`: file checks only, no subprocess, no loading.
    home = toolkit_home()
    if home is None:
        return False, (
            "Ascend ACL runtime (lib64/libascendcl.so) not found under ASCEND_HOME_PATH, "
            f"ASCEND_TOOLKIT_HOME or {_DEFAULT_HOME}; install CANN and source its set_env.sh"
        )
    missing = [name for name in _RUNTIME_LIBRARIES if not (home / "lib64" / name).is_file()]
    if missing:
        return False, f"CANN at {home} lacks {', '.join(missing)} (aclnn operators, HCCL)"
    return True, f"CANN at {home}"


def _runtime_libraries() -> list[Path]:
    home = toolkit_home()
    if home is None:
        raise RuntimeError("the Ascend ACL runtime is no longer found (ASCEND_HOME_PATH)")
    return [home / "lib64" / name for name in _RUNTIME_LIBRARIES]


backend = Backend(
    name="npu",
    library=_LIBRARY,
    priority=30,
    probe=_probe,
    description="Huawei Ascend NPU (ACL runtime, aclnn kernels, HCCL)",
    runtime_libraries=_runtime_libraries,
)
