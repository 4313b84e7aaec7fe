"""Collectives on device tensors: the staged Gloo c10d backend.

Registered at activation for the active device, so ``init_process_group()``
(or ``init_process_group("staged_gloo")`` for CPU tensors as well) runs
collectives on device tensors through PyTorch's Gloo backend: device memory
is aliased when host code can address it, otherwise copied through pinned host
buffers. A backend with its own collective library passes
``Backend(collectives=...)`` to register that instead.

Environment: ``TORCH_BACKEND_DIST_STAGING=pinned`` always copies through pinned
buffers (the path devices without host-addressable memory take).
"""

from __future__ import annotations

import os
from datetime import timedelta

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
