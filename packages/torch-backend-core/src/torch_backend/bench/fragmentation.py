"""``python -m torch_backend.bench.fragmentation``: memory held for a fragmenting workload, with and
without expandable segments (``PYTORCH_ALLOC_CONF=expandable_segments:True``).

The workload is variable-length training in miniature: each step's activations take a size of their
own, and a cache entry from every step outlives it for a while. Freed activations leave holes that
the cache entries split and pin, so ordinary segments fill up with memory "reserved but
unallocated"; expandable segments give free pages back and map them where they are needed. Each
setting runs in a process of its own; the line printed per setting is the peak reserved over the
peak allocated (1.0 would be no waste), and with ``--limit-mib`` whether the workload fits.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys

MiB = 1 << 20
#: What the process prints when the runtime has no virtual memory calls (core's warning).
NO_VIRTUAL_MEMORY = "has no virtual memory calls"


def active_device() -> str:
    """The active backend's device type; raises where none is active."""
    import torch  # noqa: F401  (activates the backend)

    import torch_backend

    active = torch_backend.active_backend()
    if active is None:
        raise RuntimeError("no torch-backend device is active (TORCH_BACKEND=none or none available)")
    return active.name


def workload(steps: int = 200, seed: int = 0) -> None:
    """Runs the fragmenting steps on the active device; raises torch.OutOfMemoryError if they do not fit."""
    import torch

    device = active_device()
    rng = random.Random(seed)
    window: list[torch.Tensor] = []
    for step in range(steps):
        activations = torch.empty(rng.randint(8 * MiB, 128 * MiB) // 4, device=device)
        window.append(torch.full((rng.randint(3 * MiB // 2, 6 * MiB) // 4,), float(step), device=device))
        del activations
        if len(window) > 16:
            window.pop(0)
    # The memory the cache entries live in was never unmapped under them.
    for entry in window:
        if not bool((entry == entry[0]).all()):
            raise AssertionError("a cache entry changed while the allocator unmapped pages")


def measure(limit_mib: int | None) -> dict:
    """In this process: the workload under the limit, its peaks, and the cache emptied after."""
    import torch

    dev = getattr(torch, active_device())
    if limit_mib is not None:
        dev.set_per_process_memory_fraction(limit_mib * MiB / dev.get_device_properties(0).total_memory)
    dev.reset_peak_memory_stats()
    oom = None
    try:
        workload()
    except torch.OutOfMemoryError as error:
        oom = str(error)
    stats = dev.memory_stats()
    segments = dev.memory._snapshot()["segments"]
    dev.empty_cache()
    return {
        "oom": oom,
        "peak_reserved": stats["reserved_bytes.all.peak"],
        "peak_allocated": stats["allocated_bytes.all.peak"],
        "expandable": sorted({segment["is_expandable"] for segment in segments}),
        "reserved_after_empty_cache": dev.memory_reserved(),
    }


def run(expandable: bool, limit_mib: int | None = None, timeout: float = 300) -> dict:
    """measure() in a fresh process with the setting on or off; ``supported`` False where it is ignored."""
    env = os.environ | {"PYTORCH_ALLOC_CONF": f"expandable_segments:{expandable}"}
    command = [sys.executable, "-m", "torch_backend.bench.fragmentation", "--child"]
    if limit_mib is not None:
        command += ["--limit-mib", str(limit_mib)]
    out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"the workload's process exited {out.returncode}:\n{out.stdout}{out.stderr}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["supported"] = not (expandable and NO_VIRTUAL_MEMORY in out.stderr)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit-mib", type=int, default=None, help="memory fraction set to this many MiB")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.limit_mib)))
        return 0
    limit = f", limit {args.limit_mib} MiB" if args.limit_mib else ""
    print(f"fragmenting workload on {active_device()} (200 steps{limit}), each setting in its own process")
    print(f"{'segments':<12}{'peak reserved':>16}{'peak allocated':>16}{'ratio':>8}  result")
    for expandable in (False, True):
        result = run(expandable, args.limit_mib)
        name = "expandable" if expandable else "ordinary"
        if not result["supported"]:
            print(f"{name:<12}  (the runtime has no virtual memory calls: setting ignored)")
            continue
        ratio = result["peak_reserved"] / result["peak_allocated"]
        outcome = "out of memory" if result["oom"] else "fits"
        print(
            f"{name:<12}{result['peak_reserved'] / MiB:>12.0f} MiB{result['peak_allocated'] / MiB:>12.0f} MiB"
            f"{ratio:>8.2f}  {outcome}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
