"""``python -m torch_backend.bench.allreduce``: all_reduce bus bandwidth and latency, device vs plain Gloo on CPU.

Starts ``--nproc`` local ranks (loopback TCP). Device tensors go through the
staged Gloo backend (host-addressable memory aliased), the staged backend forced
through pinned buffers (the path of devices whose memory host code cannot
address) and, where the device library has collectives, core's native backend;
CPU tensors through plain Gloo. All are timed interleaved, medians of the
repeats: bus bandwidth at ``--mib`` MiB, and latency of an 8-byte all_reduce.
``--runs N`` launches it N times and reports each ratio's median and range
across the runs.
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

TARGET = 0.8  # staged paths: of plain Gloo's bus bandwidth
NATIVE_TARGETS = (2.0, 4.0, 0.5)  # native: x plain Gloo, x the pinned path; latency x plain Gloo's
LATENCY_CALLS = 50
#: The synchronous-loop pattern: this many 8-byte all_reduce calls between two host synchronisations (the
#: plainest user loop; issue 68's went exponential at 20).
SYNC_LOOP_CALLS = 1000


def bus_bandwidth(nbytes: int, seconds: float, world: int) -> float:
    """GB/s as nccl-tests define it: the ring moves 2(n-1)/n of the buffer per rank."""
    return nbytes * 2 * (world - 1) / world / seconds / 1e9


def rank_main(args: argparse.Namespace) -> None:
    import torch_backend
    from torch_backend.distributed import BACKEND_NAME, native_backend_name

    device_type = args.device or torch_backend.active_backend().name
    device = torch.device(device_type, 0)
    store = dist.TCPStore("127.0.0.1", args.port, args.world, is_master=False, timeout=timedelta(seconds=120))
    backends = f"cpu:gloo,{device_type}:{BACKEND_NAME}"  # CPU tensors: plain Gloo
    dist.init_process_group(backends, store=store, rank=args.rank, world_size=args.world)
    os.environ["TORCH_BACKEND_DIST_STAGING"] = "pinned"
    pinned_group = dist.new_group(backend=BACKEND_NAME)
    del os.environ["TORCH_BACKEND_DIST_STAGING"]

    native = native_backend_name(device_type)
    native_group = dist.new_group(backend=native) if native in dist.Backend.backend_list else None

    numel = args.mib * 2**20 // 4
    paths = {
        "cpu (plain Gloo)": ("cpu", None),
        f"{device_type} (staged)": (device, None),
        f"{device_type} (pinned copies)": (device, pinned_group),
    }
    if native_group is not None:
        paths[f"{device_type} (native {native})"] = (device, native_group)
    tensors = {name: (torch.ones(numel, device=on), group) for name, (on, group) in paths.items()}
    small = {name: (torch.ones(2, device=on), group) for name, (on, group) in paths.items()}

    def timed(tensor: torch.Tensor, group: dist.ProcessGroup | None, calls: int = 1, each: bool = True) -> float:
        """Seconds per call of ``calls`` all_reduce calls, the host synchronising after each (``each``) or
        once after them all (the synchronous-loop pattern)."""
        dist.barrier()
        torch.accelerator.synchronize(device)
        start = time.perf_counter()
        for _ in range(calls):
            dist.all_reduce(tensor, group=group)
            if each:
                torch.accelerator.synchronize(device)
        torch.accelerator.synchronize(device)
        return (time.perf_counter() - start) / calls

    samples: dict[str, list[float]] = {name: [] for name in tensors}
    latency: dict[str, list[float]] = {name: [] for name in small}
    looped: dict[str, list[float]] = {name: [] for name in small}
    for name in tensors:  # warm-up: connections, communicators, pinned buffers, page faults
        timed(*tensors[name])
        timed(*small[name], calls=5)
    for _ in range(args.repeats):
        for name in tensors:
            samples[name].append(timed(*tensors[name]))
            latency[name].append(timed(*small[name], calls=LATENCY_CALLS))
    # After the others: a thousand collectives left in flight would slow the next bandwidth timing.
    for _ in range(args.repeats):
        for name in tensors:
            if args.sync_loop_calls:
                looped[name].append(timed(*small[name], calls=args.sync_loop_calls, each=False))
            else:
                looped[name].append(float("nan"))
    if args.rank == 0:
        report(samples, latency, looped, numel * 4, args)
    dist.destroy_process_group()


def report(
    samples: dict[str, list[float]],
    latency: dict[str, list[float]],
    looped: dict[str, list[float]],
    nbytes: int,
    args: argparse.Namespace,
) -> None:
    names = list(samples)
    cpu_name, pinned_name = names[0], names[2]
    median_bw = {name: bus_bandwidth(nbytes, statistics.median(samples[name]), args.world) for name in names}
    median_latency = {name: statistics.median(latency[name]) for name in names}
    median_looped = {name: statistics.median(looped[name]) for name in names}
    print(f"all_reduce of {args.mib} MiB float32, {args.world} ranks, {args.repeats} repeats (medians)")
    print(f"8 B: synchronised after each call; loop: {args.sync_loop_calls} calls, then one synchronisation")
    print(
        f"{'tensors':<30}{'time (s)':>10}{'bus GB/s':>10}{'vs cpu':>8}{'spread':>8}{'8 B (us)':>10}"
        f"{'loop (us)':>10}  target"
    )
    rows = []
    for name in names:
        times = samples[name]
        median = statistics.median(times)
        bw = median_bw[name]
        ratio = bw / median_bw[cpu_name]
        spread = (max(times) - min(times)) / median
        micros = median_latency[name] * 1e6
        if name == cpu_name:
            met = ""
        elif "native" in name:
            vs_pinned = bw / median_bw[pinned_name]
            vs_latency = median_latency[name] / median_latency[cpu_name]
            wanted_cpu, wanted_pinned, wanted_latency = NATIVE_TARGETS
            ok = ratio >= wanted_cpu and vs_pinned >= wanted_pinned and vs_latency <= wanted_latency
            met = (
                f">= {wanted_cpu} x cpu, >= {wanted_pinned} x pinned ({vs_pinned:.1f}), "
                f"latency <= {wanted_latency} x cpu ({vs_latency:.2f})  {'yes' if ok else 'NO'}"
            )
        else:
            met = f">= {TARGET}  {'yes' if ratio >= TARGET else 'NO'}"
        loop_micros = median_looped[name] * 1e6
        figures = f"{median:>10.4f}{bw:>10.2f}{ratio:>8.2f}{spread:>8.2f}{micros:>10.1f}{loop_micros:>10.1f}"
        print(f"{name:<30}{figures}  {met}")
        rows.append(
            {
                "tensors": name,
                "seconds": median,
                "bus_gbps": bw,
                "ratio": ratio,
                "spread": spread,
                "latency_us": micros,
                "sync_loop_us": loop_micros,
            }
        )
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


# Across --runs launches: a native path's ratio to plain Gloo, as the median of the runs and none below
# this (each ratio measured within one run; scheduling moves single runs a lot on a shared machine).
NATIVE_LOWEST = 1.5


def launch_runs(args: argparse.Namespace, argv: list[str]) -> int:
    """``args.runs`` launches, each ratio measured within its run; then per path the median ratio and the
    lowest and highest, with the native paths' targets (median >= NATIVE_TARGETS[0], none below
    NATIVE_LOWEST)."""
    import tempfile

    runs: list[list[dict]] = []
    with tempfile.TemporaryDirectory() as folder:
        for run in range(args.runs):
            path = Path(folder) / f"run{run}.json"
            code = launch(args, [*argv, "--json", str(path)])
            if code != 0:
                return code
            runs.append(json.loads(path.read_text()))
    print(f"\n{args.runs} runs: each path's bus bandwidth / plain Gloo's, median (lowest - highest)")
    summary, ok = [], True
    for index, row in enumerate(runs[0]):
        ratios = [run[index]["ratio"] for run in runs]
        median, lowest, highest = statistics.median(ratios), min(ratios), max(ratios)
        met = ""
        if "native" in row["tensors"]:
            wanted = NATIVE_TARGETS[0]
            met_here = median >= wanted and lowest >= NATIVE_LOWEST
            ok = ok and met_here
            met = f"  median >= {wanted}, none below {NATIVE_LOWEST}: {'yes' if met_here else 'NO'}"
        print(f"{row['tensors']:<30}{median:>8.2f} ({lowest:.2f} - {highest:.2f}){met}")
        summary.append({"tensors": row["tensors"], "ratios": ratios, "median": median})
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"runs": runs, "summary": summary}, indent=2))
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", help="device type (default: the active backend)")
    parser.add_argument("--nproc", dest="world", type=int, default=2)
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="smoke mode for CI: 1 MiB, 2 repeats")
    parser.add_argument(
        "--sync-loop-calls", type=int, default=SYNC_LOOP_CALLS, help="calls of the synchronous loop (0: none)"
    )
    parser.add_argument("--json", help="write the rows here (rank 0)")
    parser.add_argument(
        "--runs", type=int, default=1, help="launches; above 1, the median and range of each ratio across them"
    )
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.mib, args.repeats = 1, 2
    if args.rank is None:
        return launch_runs(args, argv) if args.runs > 1 else launch(args, argv)
    rank_main(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
