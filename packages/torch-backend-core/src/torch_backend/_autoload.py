"""The ``torch.backends`` entry point PyTorch calls at the end of ``import torch``.

Nothing here may raise: PyTorch turns any exception into a failed
``import torch``. Problems become warnings that name the backend and reason.
"""

from __future__ import annotations

import warnings


def autoload() -> None:
    try:
        _autoload()
    except Exception as exc:  # never break `import torch`
        warnings.warn(f"torch-backend: autoload failed: {type(exc).__name__}: {exc}", RuntimeWarning, stacklevel=2)


def _autoload() -> None:
    from torch_backend._activation import NoDevicesError, activate_backend
    from torch_backend._discovery import choose, discover, requested
    from torch_backend._intree import usable_in_tree_accelerator

    request = requested()
    if request == "none":
        return
    infos = discover()
    for info in infos:
        if info.backend is None:
            warnings.warn(
                f"torch-backend: backend '{info.name}' ({info.distribution}) {info.reason}",
                RuntimeWarning,
                stacklevel=3,
            )
    # A package built for another torch (torch upgraded under it) is never
    # passed over silently: once per reason (core's names every backend).
    for reason in dict.fromkeys(i.reason for i in infos if i.extra.get("build_mismatch") and request is None):
        warnings.warn(f"torch-backend: {reason}", RuntimeWarning, stacklevel=3)
    if request is None and usable_in_tree_accelerator() is not None:
        # PyTorch's own accelerator keeps the process: never taken over
        # implicitly, and quietly (`python -m torch_backend` explains).
        return
    passed_over: list[tuple[str, Exception]] = []
    while True:
        chosen, why = choose(infos, request)
        if chosen is None or chosen.backend is None:
            for name, exc in passed_over:  # nothing active: say why
                _warn_not_activated(name, exc)
            if why:
                warnings.warn(f"torch-backend: {why}", RuntimeWarning, stacklevel=3)
            return
        try:
            activate_backend(chosen.backend)
            return
        except NoDevicesError as exc:
            if request is not None:
                _warn_not_activated(chosen.name, exc)
                return
            # Chosen automatically, and its runtime found no device (the process is as it was): the next
            # backend by priority.
            passed_over.append((chosen.name, exc))
            infos = [info for info in infos if info is not chosen]
        except Exception as exc:
            _warn_not_activated(chosen.name, exc)
            return


def _warn_not_activated(name: str, exc: Exception) -> None:
    warnings.warn(f"torch-backend: backend '{name}' could not be activated: {exc}", RuntimeWarning, stacklevel=4)
