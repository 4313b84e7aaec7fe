"""Activating one backend: PyTorch allows one PrivateUse1 backend per process."""

from __future__ import annotations

import atexit
import os
import threading
import warnings

from torch_backend._backend import Backend
from torch_backend._discovery import choose, discover
from torch_backend._intree import InTreeAccelerator, usable_in_tree_accelerator

_lock = threading.Lock()
_active: Backend | None = None


class NoDevicesError(RuntimeError):
    """A backend's runtime found no device (its probe, which loads nothing, could not tell): the process
    is left as it was, so automatic selection goes on to the next backend."""


def active_backend() -> Backend | None:
    """The backend activated in this process, if any."""
    return _active


def activate(name: str | None = None) -> Backend:
    """Activate backend ``name`` (default: the best available one) as PyTorch's PrivateUse1 device.

    Raises:
        RuntimeError: a backend is already active, PrivateUse1 is taken by
            another extension, or the backend is missing, unavailable or has
            no devices.
    """
    _check_none_active()
    info, why = choose(discover(), name, requested_by=f"torch_backend.activate({name!r})" if name else None)
    if info is None or info.backend is None:
        raise RuntimeError(why or "torch-backend: no available backend is installed")
    return activate_backend(info.backend)


def activate_backend(backend: Backend) -> Backend:
    """Activate an already discovered backend (see :func:`activate`).

    Where PyTorch's own accelerator is usable too, it activates all the same
    (the user asked for it) and warns what that breaks.
    """
    global _active
    with _lock:
        _check_none_active()
        accelerator = usable_in_tree_accelerator()
        _register(backend)
        if accelerator is not None:
            warnings.warn(coexistence_warning(backend.name, accelerator), UserWarning, stacklevel=3)
        _active = backend
        return backend


def coexistence_warning(name: str, accelerator: InTreeAccelerator) -> str:
    kind = accelerator.device_type
    return (
        f"torch-backend: '{name}' is active while PyTorch's own accelerator '{kind}' is usable "
        f"({accelerator.detail}). PyTorch serves one accelerator type per process and prefers "
        f"the PrivateUse1 device (pytorch/pytorch#161129): in this process backward through "
        f"'{kind}' tensors fails in autograd's engine, and torch.accelerator and "
        f"device-generic code mean '{name}', not '{kind}'. To train on '{kind}', leave "
        f"TORCH_BACKEND unset (a backend is then not activated where '{kind}' is usable) or set it to 'none'."
    )


def _check_none_active() -> None:
    if _active is not None:
        raise RuntimeError(
            f"torch-backend: backend '{_active.name}' is already active; "
            "PyTorch supports one PrivateUse1 backend per process"
        )


def _register(backend: Backend) -> None:
    import torch

    from torch_backend import _C
    from torch_backend._device_module import make_device_module

    taken = torch._C._get_privateuse1_backend_name()
    if taken != "privateuseone":
        raise RuntimeError(
            f"torch-backend: cannot activate '{backend.name}': PrivateUse1 is already registered as '{taken}'"
        )
    # Settings first, and load and query before touching PyTorch, so a bad
    # setting or a backend without devices leaves the process as it was.
    autocompare = None
    if os.environ.get("TORCH_BACKEND_AUTOCOMPARE"):  # the module costs 5 ms to import: only when asked
        from torch_backend import _autocompare

        autocompare = _autocompare.settings_from_environment()
    _load_runtime_libraries(backend)
    _C._load_device_library(str(backend.library))
    if _C._loaded_device_count() == 0:
        raise NoDevicesError(f"torch-backend: backend '{backend.name}' reports no devices")
    torch.utils.rename_privateuse1_backend(backend.name)
    _C._activate()
    # Runs before the interpreter finalises: device work and PyTorch's autograd
    # device threads finish while Python can still serve them (Shutdown.cpp).
    atexit.register(_C._prepare_exit)
    os.register_at_fork(after_in_child=_after_fork_in_child)
    device_module = make_device_module(backend.name)
    torch._register_device_module(backend.name, device_module)
    torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=True)
    from torch_backend import _sharing
    from torch_backend._compile import dynamo, inductor
    from torch_backend._when_imported import when_imported

    _sharing.register(backend.name)
    when_imported("torch._dynamo", lambda _: dynamo.register(device_module, backend))
    when_imported("torch._inductor.compile_fx", lambda _: inductor.register(backend))
    _register_collectives(backend)
    if autocompare is not None:
        _autocompare.enable(backend.name, autocompare)


def _load_runtime_libraries(backend: Backend) -> None:
    if backend.runtime_libraries is None:
        return
    import ctypes

    try:
        libraries = list(backend.runtime_libraries())
    except Exception as error:  # the backend's own lookup: its words, core's prefix
        raise RuntimeError(f"torch-backend: cannot activate '{backend.name}': {error}") from error
    for library in libraries:
        try:
            ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
        except OSError as error:
            raise RuntimeError(
                f"torch-backend: cannot activate '{backend.name}': "
                f"loading its runtime library {library} failed: {error}"
            ) from error


def _register_collectives(backend: Backend) -> None:
    # The device is usable without collectives: a failure here only warns.
    try:
        if backend.collectives is not None:
            backend.collectives()
        else:
            from torch_backend.distributed import register_native_backend, register_staged_backend

            register_staged_backend(backend.name)
            register_native_backend(backend.name)
    except Exception as error:
        warnings.warn(
            f"torch-backend: no c10d backend for '{backend.name}' tensors: {error}",
            RuntimeWarning,
            stacklevel=2,
        )


def _after_fork_in_child() -> None:
    from torch_backend import _C

    # PyTorch's autograd engine waits at exit for its device threads, up to
    # TORCH_AUTOGRAD_SHUTDOWN_WAIT_LIMIT (10 s). A child forked after the device
    # was used inherits the engine's count of those threads but not the threads,
    # so it would wait the full limit before exiting.
    if _C._in_bad_fork():
        os.environ.setdefault("TORCH_AUTOGRAD_SHUTDOWN_WAIT_LIMIT", "0")
