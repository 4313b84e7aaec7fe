"""Finding installed backends and choosing the one to activate."""

from __future__ import annotations

import importlib.util
import os
from importlib.metadata import entry_points
from pathlib import Path

from torch_backend._backend import Backend, BackendInfo
from torch_backend._compat import build_mismatch

ENTRY_POINT_GROUP = "torch_backend.backends"
SELECT_ENV = "TORCH_BACKEND"


def discover() -> list[BackendInfo]:
    """Every installed backend entry point, highest priority first.

    Loading an entry point imports only the backend's Python package, never
    its device library. A failure is recorded, not raised. A backend, or core
    itself, compiled against another torch release than the installed one is
    unavailable, with both versions in the reason.
    """
    core_mismatch = build_mismatch("torch-backend-core", Path(__file__).resolve().parent)
    found = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else "?"
        info = BackendInfo(entry_point=ep.name, distribution=dist)
        try:
            backend = ep.load()
            if not isinstance(backend, Backend):
                raise TypeError(f"entry point {ep.value!r} is {type(backend).__name__!r}, not a torch_backend.Backend")
            if backend.name != ep.name:
                raise ValueError(f"entry point {ep.name!r} declares device name {backend.name!r}")
            info.backend = backend
            package_dir = _package_dir(ep.module)
            mismatch = core_mismatch or (build_mismatch(dist, package_dir) if package_dir else None)
            if mismatch is not None:
                info.reason = mismatch
                info.extra["build_mismatch"] = True
            else:
                info.available, info.reason = backend.availability()
        except Exception as exc:  # a broken plugin must never break discovery
            info.reason = f"broken: {type(exc).__name__}: {exc}"
        found.append(info)
    return sorted(found, key=lambda i: (-i.priority, i.name))


def _package_dir(module: str) -> Path | None:
    """Folder of the top-level package of an (already imported) entry-point module; None for a plain module."""
    spec = importlib.util.find_spec(module.split(".")[0])
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def requested() -> str | None:
    """The TORCH_BACKEND setting: a name, 'none', or None for automatic."""
    value = os.environ.get(SELECT_ENV, "").strip()
    return value or None


def choose(
    infos: list[BackendInfo], request: str | None, requested_by: str | None = None
) -> tuple[BackendInfo | None, str]:
    """The backend to activate and, if none, why not (empty when that is expected).

    ``requested_by`` names where the request came from in that reason (default: the TORCH_BACKEND setting).
    """
    if request == "none":
        return None, ""
    if request is not None:
        source = requested_by or f"{SELECT_ENV}={request}"
        for info in infos:
            if info.name == request:
                if info.backend is None or not info.available:
                    return None, f"{source}: backend '{request}' is not usable: {info.reason}"
                return info, ""
        installed = ", ".join(i.name for i in infos) or "none"
        return None, f"{source}: no such backend is installed (installed: {installed})"
    for info in infos:
        if info.available:
            return info, ""
    return None, ""
