"""Finding installed backends and choosing the one to activate."""

from __future__ import annotations

import os
from importlib.metadata import entry_points

from torch_backend._backend import Backend, BackendInfo

ENTRY_POINT_GROUP = "torch_backend.backends"
SELECT_ENV = "TORCH_BACKEND"


def discover() -> list[BackendInfo]:
    """Every installed backend entry point, highest priority first.

    Loading an entry point imports only the backend's Python package, never
    its device library. A failure is recorded, not raised.
    """
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
            info.available, info.reason = backend.availability()
        except Exception as exc:  # a broken plugin must never break discovery
            info.reason = f"broken: {type(exc).__name__}: {exc}"
        found.append(info)
    return sorted(found, key=lambda i: (-i.priority, i.name))


def requested() -> str | None:
    """The TORCH_BACKEND setting: a name, 'none', or None for automatic."""
    value = os.environ.get(SELECT_ENV, "").strip()
    return value or None


def choose(infos: list[BackendInfo], request: str | None) -> tuple[BackendInfo | None, str]:
    """The backend to activate and, if none, why not (empty when that is expected)."""
    if request == "none":
        return None, ""
    if request is not None:
        for info in infos:
            if info.name == request:
                if info.backend is None or not info.available:
                    return None, f"{SELECT_ENV}={request}: backend '{request}' is not usable: {info.reason}"
                return info, ""
        installed = ", ".join(i.name for i in infos) or "none"
        return None, f"{SELECT_ENV}={request}: no such backend is installed (installed: {installed})"
    for info in infos:
        if info.available:
            return info, ""
    return None, ""
