"""``python -m torch_backend.bench.allreduce``: all_reduce bus bandwidth, device vs plain Gloo on CPU.

Starts ``--nproc`` local ranks (loopback TCP). In one group, device tensors go
through the device's c10d backend (staged Gloo by default) and CPU tensors
through plain Gloo; the two are timed interleaved, medians of the repeats.
Also times the staged backend forced through pinned buffers, the path of
devices whose memory host code cannot address.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

TARGET = 0.8


def bus_bandwidth(nbytes: int, seconds: float, world: int) -> float:
    """GB/s as nccl-tests define it: the ring moves 2(n-1)/n of the buffer per rank."""
    return nbytes * 2 * (world - 1) / world / seconds / 1e9


def rank_main(args: argparse.Namespace) -> None:
    import torch_backend
    from torch_backend.distributed import BACKEND_NAME

    device_type = args.device or torch_backend.active_backend().name
    device = torch.device(device_type, 0)
    store = dist.TCPStore("127.0.0.1", args.port, args.world, is_master=False, timeout=timedelta(seconds=120))
    backends = f"cpu:gloo,{device_type}:{BACKEND_NAME}"  # CPU tensors: plain Gloo
    dist.init_process_group(backends, store=store, rank=args.rank, world_size=args.world)
    os.environ["TORCH_BACKEND_DIST_STAGING"] = "pinned"
    pinned_group = dist.new_group(backend=BACKEND_NAME)
    del os.environ["TORCH_BACKEND_DIST_STAGING"]

    numel = args.mib * 2**20 // 4
    tensors = {
        "cpu (plain Gloo)": (torch.ones(numel), None),
        f"{device_type} (staged)": (torch.ones(numel, device=device), None),
        f"{device_type} (pinned copies)": (torch.ones(numel, device=device), pinned_group),
    }

    def timed(tensor: torch.Tensor, group: dist.ProcessGroup | None) -> float:
        dist.barrier()
        torch.accelerator.synchronize(device)
        start = time.perf_counter()
        dist.all_reduce(tensor, group=group)
        torch.accelerator.synchronize(device)
        return time.perf_counter() - start

    samples: dict[str, list[float]] = {name: [] for name in tensors}
    for tensor, group in tensors.values():
        timed(tensor, group)  # warm-up: connections, pinned buffers, page faults
    for _ in range(args.repeats):
        for name, (tensor, group) in tensors.items():
            samples[name].append(timed(tensor, group))
    if args.rank == 0:
        report(samples, numel * 4, args)
    dist.destroy_process_group()


def report(samples: dict[str, list[float]], nbytes: int, args: argparse.Namespace) -> None:
    cpu_name = next(iter(samples))
    cpu_bw = bus_bandwidth(nbytes, statistics.median(samples[cpu_name]), args.world)
    print(f"all_reduce of {args.mib} MiB float32, {args.world} ranks, {args.repeats} repeats (medians)")
    print(f"{'tensors':<26}{'time (s)':>10}{'bus GB/s':>10}{'vs cpu':>8}{'spread':>8}  target")
    rows = []
    for name, times in samples.items():
        median = statistics.median(times)
        bw = bus_bandwidth(nbytes, median, args.world)
        ratio = bw / cpu_bw
        spread = (max(times) - min(times)) / median
        met = "" if name == cpu_name else f">= {TARGET}  {'yes' if ratio >= TARGET else 'NO'}"
        print(f"{name:<26}{median:>10.4f}{bw:>10.2f}{ratio:>8.2f}{spread:>8.2f}  {met}")
        rows.append({"tensors": name, "seconds": median, "bus_gbps": bw, "ratio": ratio, "spread": spread})
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(rows, indent=2))


def launch(args: argparse.Namespace, argv: list[str]) -> int:
    store = dist.TCPStore("127.0.0.1", 0, args.world, is_master=True, wait_for_workers=False)
    command: Callable[[int], list[str]] = lambda rank: [  # noqa: E731
        sys.executable, "-m", "torch_backend.bench.allreduce", *argv,
        "--rank", str(rank), "--port", str(store.port),
    ]  # fmt: skip
    procs = [subprocess.Popen(command(rank)) for rank in range(args.world)]
    codes = [p.wait(timeout=600) for p in procs]
    return max(codes, key=abs)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", help="device type (default: the active backend)")
    parser.add_argument("--nproc", dest="world", type=int, default=2)
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="smoke mode for CI: 1 MiB, 2 repeats")
    parser.add_argument("--json", help="write the rows here (rank 0)")
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.mib, args.repeats = 1, 2
    if args.rank is None:
        return launch(args, argv)
    rank_main(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
