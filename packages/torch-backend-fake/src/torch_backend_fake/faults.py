"""Fault injection into the fake runtime, for testing error paths (see csrc/FaultInjection.h).

``inject("malloc", nth=3)`` makes the third ``malloc`` call from now fail, as a
driver error would; ``lose_device(1)`` fails every later call that would run on
device 1. ``TORCH_BACKEND_FAKE_FAULTS="malloc:3,event_record:1:2"`` arms faults
at start instead. Faults surface through core as Python exceptions
(RuntimeError; ``torch.OutOfMemoryError`` for ``out_of_memory=True``).
"""

from __future__ import annotations

import ctypes
import functools

OPERATIONS = (
    "malloc",
    "host_malloc",
    "memcpy",
    "memcpy_async",
    "stream_create",
    "stream_query",
    "stream_synchronize",
    "stream_wait_event",
    "event_create",
    "event_record",
    "event_query",
    "event_synchronize",
    "synchronize_device",
    "kernel",  # a kernel launch: fails on its stream; the next synchronising call reports it
    "stream",  # every stream_* call
    "event",  # every event_* call
)
#: Calls of fake's collective library (torch.distributed on the native backend, "fakeccl"):
#: "collective" fails on its stream (its communicator's asynchronous error, which core's watchdog
#: turns into the group's failure); "collective_hang" never completes, as on a hung rank, until
#: the watchdog's timeout aborts it.
COLLECTIVE_OPERATIONS = ("collective", "collective_hang")


@functools.cache
def _library() -> ctypes.CDLL:
    from torch_backend_fake import backend

    library = ctypes.CDLL(str(backend.library))  # the copy core loaded: same handle
    library.torch_backend_fake_inject_fault.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.c_long, ctypes.c_int]
    library.torch_backend_fake_lose_device.argtypes = [ctypes.c_int]
    library.torch_backend_fake_faults_injected.restype = ctypes.c_long
    return library


def inject(operation: str, nth: int = 1, times: int = 1, out_of_memory: bool = False) -> None:
    """Fail the ``nth`` call of ``operation`` from now, and the ``times - 1`` calls after it.

    ``out_of_memory``: fail as the runtime does when memory runs out (``malloc``).
    """
    if operation not in OPERATIONS + COLLECTIVE_OPERATIONS:
        known = ", ".join(OPERATIONS + COLLECTIVE_OPERATIONS)
        raise ValueError(f"unknown fake runtime operation {operation!r}; one of {known}")
    if nth < 1 or times < 1:
        raise ValueError(f"nth and times must be >= 1, got nth={nth}, times={times}")
    if _library().torch_backend_fake_inject_fault(operation.encode(), nth, times, int(out_of_memory)) != 0:
        raise RuntimeError(f"the fake runtime refused fault {operation}:{nth}:{times}")


def lose_device(index: int) -> None:
    """From now on, every call that would run on device ``index`` fails (until the process ends)."""
    _library().torch_backend_fake_lose_device(index)


def clear() -> None:
    """Disarm pending faults (a lost device stays lost)."""
    _library().torch_backend_fake_clear_faults()


def injected() -> int:
    """How many runtime calls failed by injection so far in this process."""
    return int(_library().torch_backend_fake_faults_injected())
