"""Core's own build hook: the one core installs for backends, loaded from this source tree
(a package cannot use a plugin it has not installed yet)."""

import importlib.util
from pathlib import Path

_HOOK = Path(__file__).resolve().parent / "src" / "torch_backend" / "_build" / "cmake_build_hook.py"
_spec = importlib.util.spec_from_file_location("torch_backend_cmake_build_hook", _HOOK)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)


def get_build_hook() -> type:
    return _module.CMakeBuildHook
