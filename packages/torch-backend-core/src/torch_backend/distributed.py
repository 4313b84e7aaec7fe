"""Collectives on device tensors: the staged Gloo c10d backend, and the native one.

Registered at activation for the active device, so ``init_process_group()``
(or ``init_process_group("staged_gloo")`` for CPU tensors as well) runs
collectives on device tensors through PyTorch's Gloo backend: device memory
is aliased when host code can address it, otherwise copied through pinned host
buffers.

Where the device library exports collectives (``DeviceCollectives.h``: NCCL's
or HCCL's role), core's native c10d backend, ``"<device>ccl"`` (``fakeccl`` on
fake), runs them on the device's own streams instead and is the device's
default: ``init_process_group()`` picks it, ``init_process_group("staged_gloo")``
still gives the staged one. CPU tensors in a native group go to Gloo. A
watchdog enforces the group's timeout and the library's asynchronous errors:
unfinished collectives fail, and later ones raise, naming the failure
(``TORCH_BACKEND_DIST_ERROR_HANDLING=abort``: the process ends instead). A
backend with a c10d backend of its own passes ``Backend(collectives=...)`` to
register that instead.

Environment: ``TORCH_BACKEND_DIST_STAGING=pinned`` always copies through pinned
buffers (the path devices without host-addressable memory take).
"""

from __future__ import annotations

import atexit
import functools
import os
from datetime import timedelta
from typing import Any

import torch

#: The name to pass to ``init_process_group`` (or in "cpu:gloo,fake:staged_gloo").
BACKEND_NAME = "staged_gloo"

_STAGING_ENV = "TORCH_BACKEND_DIST_STAGING"


def register_staged_backend(device: str) -> bool:
    """Make the staged Gloo backend the default c10d backend of ``device``.

    Returns False (and registers nothing) when this torch has no Gloo.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_gloo_available()):
        return False
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, devices=[device, "cpu"])
    return True


def native_backend_name(device: str) -> str:
    """The c10d name of core's native backend for ``device`` (``"fakeccl"``)."""
    return f"{device}ccl"


def register_native_backend(device: str) -> str | None:
    """Register core's native c10d backend as ``device``'s default if its library has collectives; returns its name."""
    import torch.distributed as dist

    from torch_backend import _C

    if not (dist.is_available() and dist.is_gloo_available() and _C._has_device_collectives()):
        return None
    name = native_backend_name(device)

    def create(options: Any, backend_options: Any) -> torch._C._distributed_c10d.Backend:
        # The extended creator: its options name the members' global ranks (the flight recorder's
        # pg_config and the file name of each rank's dump need them).
        from torch.distributed import PrefixStore, ProcessGroupGloo

        from torch_backend import _distributed

        _drain_watchdogs_at_exit()

        def make_gloo(
            gloo_store: torch.distributed.Store, gloo_rank: int, size: int, timeout: timedelta
        ) -> torch._C._distributed_c10d.Backend:
            # For CPU tensors in the group, and in every group split from it.
            return ProcessGroupGloo(gloo_store, gloo_rank, size, timeout)

        return _distributed.make_native_backend(
            PrefixStore(f"{name}/", options.store),
            options.group_rank,
            options.group_size,
            list(options.global_ranks_in_group),  # empty for the default group: every rank
            make_gloo,
            name,
            options.timeout,
            _end_process_on_error(),
        )

    dist.Backend.register_backend(name, create, devices=[device, "cpu"], extended_api=True)
    # Registering claims the device only where it has no default yet (torch releases differ).
    dist.Backend.default_device_backend_map[device] = name
    return name


def dump_flight_recorder(
    include_collectives: bool = True, include_stack_traces: bool = True, only_active: bool = False
) -> bytes:
    """This process's flight recorder: the recent ops of its native groups, pickled in PyTorch's format.

    What ``torch._C._distributed_c10d._dump_nccl_trace`` gives for NCCL's groups (``pickle.loads`` reads
    it). A group that fails writes the same to ``<TORCH_FR_DUMP_TEMP_FILE><rank>`` on each of its ranks;
    ``python -m torch.distributed.flight_recorder.fr_trace DIR`` analyses such a folder.
    """
    from torch_backend import _distributed

    return _distributed.dump_flight_recorder(include_collectives, include_stack_traces, only_active)


@functools.cache
def _drain_watchdogs_at_exit() -> None:
    # Registered after activation's handler, so it runs first (atexit is last in, first out): the
    # watchdogs finish their groups' collectives (failing hung ones at the timeout) and stop before
    # core waits for the devices and Python finalises.
    from torch_backend import _distributed

    atexit.register(_distributed.drain_watchdogs)


_ERROR_HANDLING_ENV = "TORCH_BACKEND_DIST_ERROR_HANDLING"


def _end_process_on_error() -> bool:
    mode = os.environ.get(_ERROR_HANDLING_ENV, "raise")
    if mode not in ("raise", "abort"):
        raise ValueError(f"{_ERROR_HANDLING_ENV} must be 'raise' or 'abort', got {mode!r}")
    return mode == "abort"


def _always_pinned() -> bool:
    mode = os.environ.get(_STAGING_ENV, "auto")
    if mode not in ("auto", "pinned"):
        raise ValueError(f"{_STAGING_ENV} must be 'auto' or 'pinned', got {mode!r}")
    return mode == "pinned"


def _create_backend(
    store: torch.distributed.Store, rank: int, world_size: int, timeout: timedelta
) -> torch._C._distributed_c10d.Backend:
    from torch.distributed import PrefixStore, ProcessGroupGloo

    from torch_backend import _distributed

    # A store prefix of its own: a "cpu:gloo" backend may share this group's store.
    gloo = ProcessGroupGloo(PrefixStore(f"{BACKEND_NAME}/", store), rank, world_size, timeout)
    return _distributed.make_staged_backend(gloo, BACKEND_NAME, _always_pinned())
