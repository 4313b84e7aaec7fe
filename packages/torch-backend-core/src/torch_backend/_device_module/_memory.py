"""Memory: caching-allocator statistics, cache control and limits."""

from __future__ import annotations

from typing import Any

from torch_backend import _C
from torch_backend._device_module._devices import _index

__all__ = [
    "empty_cache",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "set_per_process_memory_fraction",
]


def memory_stats(device: Any = None) -> dict[str, int]:
    """Allocator statistics with torch.cuda.memory_stats' keys (``allocated_bytes.all.current``, ...)."""
    return dict(sorted(_C.memory_stats(_index(device)).items()))


def memory_allocated(device: Any = None) -> int:
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device: Any = None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device: Any = None) -> int:
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device: Any = None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device: Any = None) -> None:
    _C.reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device: Any = None) -> None:
    _C.reset_accumulated_memory_stats(_index(device))


def empty_cache() -> None:
    """Return every unused cached block to the device (all devices)."""
    _C.empty_cache()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the device, as its runtime reports them."""
    free, total = _C.mem_get_info(_index(device))
    return free, total


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    """Cap this process's reserved memory on ``device`` at ``fraction`` of its total memory."""
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    _C.set_memory_fraction(fraction, _index(device))


def _format(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.2f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A human-readable table of the allocator statistics of ``device``."""
    index = _index(device)
    stats = memory_stats(index)
    rows = [
        ("Allocated memory", "allocated_bytes", True),
        ("Active memory", "active_bytes", True),
        ("Requested memory", "requested_bytes", True),
        ("Reserved memory", "reserved_bytes", True),
        ("Non-releasable memory", "inactive_split_bytes", True),
        ("Allocations", "allocation", False),
        ("Active allocs", "active", False),
        ("Reserved segments", "segment", False),
    ]
    pools = ("all",) if abbreviated else ("all", "large_pool", "small_pool")
    line = "-" * 79
    out = [line, f" torch-backend memory summary, device {index}".ljust(79), line]
    out.append(f"{'Metric':<32}{'Cur Usage':>12}{'Peak Usage':>12}{'Tot Alloc':>12}{'Tot Freed':>11}")
    for title, key, is_bytes in rows:
        for pool in pools:
            fmt = _format if is_bytes else str
            label = title if pool == "all" else f"  from {pool.replace('_', ' ')}"
            values = [stats[f"{key}.{pool}.{m}"] for m in ("current", "peak", "allocated", "freed")]
            out.append(f"{label:<32}" + "".join(f"{fmt(v):>12}" for v in values[:3]) + f"{fmt(values[3]):>11}")
    out.append(line)
    out.append(
        f"Device allocs: {stats['num_device_alloc']}  Device frees: {stats['num_device_free']}  "
        f"Alloc retries: {stats['num_alloc_retries']}  OOMs: {stats['num_ooms']}"
    )
    out.append(line)
    return "\n".join(out) + "\n"
