"""Memory history and snapshots in torch.cuda.memory's format.

``torch.<device>.memory._record_memory_history()``, ``_snapshot()`` and
``_dump_snapshot()`` behave as CUDA's: the pickle loads in PyTorch's memory
visualiser (pytorch.org/memory_viz, ``torch.cuda._memory_viz``). Stack traces
are Python frames (``stacks="all"`` records the same: core's allocator keeps
no C++ frames).
"""

from __future__ import annotations

import pickle
import sys
from typing import Any, Literal

from torch_backend import _C

__all__ = ["_dump_snapshot", "_record_memory_history", "_snapshot"]


def _record_memory_history(
    enabled: Literal["state", "all"] | bool | None = "all",
    context: Literal["state", "alloc", "all"] | None = "all",
    stacks: Literal["python", "all"] = "all",
    max_entries: int = sys.maxsize,
    device: Any = None,
) -> None:
    """Start (``"all"``: live blocks and a trace of every allocator action;
    ``"state"``: live blocks only) or stop (``None``) recording, on every device.

    ``context=None`` records no stack traces. Starting discards what an
    earlier recording kept, as CUDA's does.
    """
    if isinstance(enabled, bool):  # torch.cuda's legacy signature
        enabled = "all" if enabled else None
    if enabled not in (None, "state", "all"):
        raise ValueError(f"enabled must be None, 'state' or 'all', got {enabled!r}")
    if context not in (None, "state", "alloc", "all"):
        raise ValueError(f"context must be None, 'state', 'alloc' or 'all', got {context!r}")
    if stacks not in ("python", "all"):
        raise ValueError(f"stacks must be 'python' or 'all', got {stacks!r}")
    if not isinstance(max_entries, int) or max_entries < 0:
        raise ValueError(f"max_entries must be a non-negative int, got {max_entries!r}")
    _C._record_memory_history(
        enabled is not None, context is not None, 0 if enabled == "state" else min(max_entries, 2**62)
    )


def _snapshot(device: Any = None) -> dict[str, Any]:
    """The allocators' segments and blocks now, and the recorded trace per device."""
    return _C._memory_snapshot()


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    """Pickle :func:`_snapshot` to ``filename`` (for pytorch.org/memory_viz)."""
    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)
