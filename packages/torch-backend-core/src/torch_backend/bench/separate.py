"""``python -m torch_backend.bench.separate``: device vs CPU, each in its own process.

The in-process table (``python -m torch_backend.bench``) interleaves the device
and the CPU in one process, where the backend's threads and PyTorch's spinning
OpenMP workers share the cores with the CPU case. This one answers "how fast
is training on this device" as a user who trains only on it sees it: the
device case runs in a process that uses only the device, the CPU case in a
process with no backend active (``TORCH_BACKEND=none``), alternated process
by process. Ratios are per round (device / CPU, each the best of its
repeats), reported as median and interquartile spread.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from torch_backend.bench._chart import plot
from torch_backend.bench._runner import Result
from torch_backend.bench.cases import _add_small
from torch_backend.bench.models import resnet18_training, small_cnn

Step = Callable[[], object]


def _train_step(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> Step:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    def step() -> None:
        for _ in range(200):
            optimizer.zero_grad()
            loss_fn(model(inputs), targets).backward()
            optimizer.step()

    return step


def mlp_step(device: torch.device) -> Step:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 10)).to(device)
    return _train_step(model, torch.randn(16, 32, device=device), torch.randint(0, 10, (16,), device=device))


def cnn_step(device: torch.device) -> Step:
    torch.manual_seed(0)
    model = small_cnn(8).to(device)
    return _train_step(model, torch.randn(8, 3, 16, 16, device=device), torch.randint(0, 10, (8,), device=device))


def resnet18_step(device: torch.device) -> Step:
    """ResNet-18 on 8 images of 32x32, three steps per timing."""
    return resnet18_training(device, 64, 8, 32)


def transformer_step(device: torch.device) -> Step:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)
    model = nn.Sequential(
        nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), nn.Flatten(), nn.Linear(8 * 32, 10)
    )
    model.to(device)
    return _train_step(model, torch.randn(4, 8, 32, device=device), torch.randint(0, 10, (4,), device=device))


# The kernel path's small ops (issue: core's host cost per op): time per op, or per call / step.
def scalar_ops(device: torch.device) -> Step:
    x = torch.randn(16, device=device)

    def run() -> None:
        for _ in range(2_000):
            (x * 2 + 1).relu()  # a Python scalar operand twice, then a unary op

    return run


def small_matmul(device: torch.device) -> Step:
    a, b = torch.randn(8, 64, device=device), torch.randn(64, 64, device=device)

    def run() -> None:
        for _ in range(2_000):
            torch.mm(a, b)

    return run


def foreach_add(device: torch.device) -> Step:
    tensors = [torch.randn(16, device=device) for _ in range(100)]
    others = [torch.randn(16, device=device) for _ in range(100)]

    def run() -> None:
        for _ in range(100):
            torch._foreach_add_(tensors, others)

    return run


def adam_step(device: torch.device) -> Step:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).to(device)
    for parameter in model.parameters():
        parameter.grad = torch.randn_like(parameter)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)

    def run() -> None:
        for _ in range(100):
            optimizer.step()

    return run


@dataclass(frozen=True)
class SeparateCase:
    name: str
    make: Callable[[torch.device], Step]
    target: float  # device / CPU time, at most
    per: int  # repetitions inside one timing, to report time per step / op


CASES = [
    SeparateCase("MLP 32-64-64-10 step", mlp_step, 1.5, 200),
    SeparateCase("CNN+BatchNorm step", cnn_step, 1.5, 200),
    SeparateCase("Transformer 2-layer step", transformer_step, 1.5, 200),
    SeparateCase("ResNet-18 step b8 32x32", resnet18_step, 1.5, 3),
    # The in-process table's own case (10,000 adds per timing).
    SeparateCase("add, 16 elements", _add_small, 1.2, 10_000),
    # Small ops on the kernel path (run with TORCH_BACKEND_FAKE_KERNELS=1 for fake's device kernels,
    # and TORCH_BACKEND_FAKE_INLINE_KERNELS=1 to leave out the hand-off to a stream's thread).
    SeparateCase("x * 2 + 1, relu (per op)", scalar_ops, 2.0, 6_000),
    SeparateCase("matmul 8x64 @ 64x64", small_matmul, 2.0, 2_000),
    SeparateCase("_foreach_add_ 100x16 (per call)", foreach_add, 2.0, 100),
    SeparateCase("Adam step, MLP 32-64-10", adam_step, 2.0, 100),
]


def worker(case_name: str, device_name: str, repeats: int) -> float:
    """Best time of ``repeats`` timings of one case, in this process."""
    from torch_backend.bench._runner import _time_once

    case = next(c for c in CASES if c.name == case_name)
    device = torch.device(device_name, 0) if device_name != "cpu" else torch.device("cpu")
    step = case.make(device)
    _time_once(step, device)  # warm-up
    return min(_time_once(step, device) for _ in range(repeats)) / case.per


# The reference that is the backend itself with every kernel forced off: what its kernels gain over the CPU
# fallback (zero-copy in host memory, copying in discrete memory).
FALLBACK = "fallback"
FORCED_FALLBACK_ENV = {"TORCH_BACKEND_FORCE_FALLBACK": "."}


def run_workers(
    module: str,
    case_names: Sequence[str],
    device_name: str,
    backend: str,
    repeats: int,
    *extra: str,
    env: dict | None = None,
) -> list[float]:
    """Runs ``python -m module --worker NAME ...`` (one ``--worker`` per case, timed one after another in that
    process) with TORCH_BACKEND=backend (and ``env`` added); returns the times it prints, one per case."""
    env = os.environ | {"TORCH_BACKEND": backend} | (env or {})
    workers = [arg for name in case_names for arg in ("--worker", name)]
    out = subprocess.run(
        [sys.executable, "-m", module, *workers, "--device", device_name, "--repeats", str(repeats), *extra],
        capture_output=True, text=True, env=env, timeout=900, check=False,
    )  # fmt: skip
    names = ", ".join(case_names)
    if out.returncode != 0:
        raise RuntimeError(f"{names} on {device_name} failed ({out.returncode}): {out.stderr[-2000:]}")
    lines = out.stdout.strip().splitlines()
    if len(lines) < len(case_names):
        raise RuntimeError(f"{names} on {device_name} printed {len(lines)} times for {len(case_names)} cases")
    return [float(line) for line in lines[-len(case_names) :]]


def process_groups(cases: list, quick: bool) -> list[list]:
    """The cases that share a worker process: each its own (fresh processes keep one case's caches, threads
    and memory from another's figures), but all of them together in a quick run, whose figures mean nothing:
    a smoke run checks that every case runs, and each process's start (importing torch) costs more than most
    quick cases."""
    return [list(cases)] if quick else [[case] for case in cases]


def median_and_spread(ratios: list[float]) -> tuple[float, float]:
    """The median ratio and its interquartile spread."""
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return statistics.median(ratios), quartiles[2] - quartiles[0]


def alternate(
    module: str, case_names: Sequence[str], device_name: str, reference: str, rounds: int, repeats: int, *extra: str
) -> list[tuple[float, float, float, float]]:
    """Rounds of one device process then one reference process (no backend active; with ``reference``
    FALLBACK, the backend with its kernels forced off), each timing every case in ``case_names``; returns,
    per case, the median device and reference times and the median ratio with its spread."""
    device_times, reference_times = [], []  # per round, per case
    for _ in range(rounds):
        device_times.append(run_workers(module, case_names, device_name, device_name, repeats, *extra))
        if reference == FALLBACK:
            reference_times.append(
                run_workers(module, case_names, device_name, device_name, repeats, *extra, env=FORCED_FALLBACK_ENV)
            )
        else:
            reference_times.append(run_workers(module, case_names, reference, "none", repeats, *extra))
    timings = []
    for i in range(len(case_names)):
        d, r = [times[i] for times in device_times], [times[i] for times in reference_times]
        ratios = [a / b for a, b in zip(d, r, strict=True)]
        timings.append((statistics.median(d), statistics.median(r), *median_and_spread(ratios)))
    return timings


def add_process_arguments(parser: argparse.ArgumentParser, *, pairs: str, repeats: int, json_name: str) -> None:
    """The options every separate-process benchmark takes: --device, --rounds, --repeats, --quick, --json,
    --case and the hidden --worker its own processes are started with."""
    parser.add_argument("--device", help="the backend's device type (default: the active backend)")
    parser.add_argument("--rounds", type=int, default=5, help=f"{pairs} process pairs per case")
    parser.add_argument("--repeats", type=int, default=repeats, help="timings per process (best is kept)")
    parser.add_argument("--quick", action="store_true", help="smoke mode for CI: figures meaningless")
    parser.add_argument("--json", default=f"bench-results/{json_name}")
    parser.add_argument("--case", action="append", help="run only cases whose name contains this (repeatable)")
    parser.add_argument("--worker", action="append", help=argparse.SUPPRESS)  # a case to time, repeatable


def selected_cases(cases: list, args: argparse.Namespace) -> list:
    """The cases (each with a ``name``) whose names contain one of the --case parts; all without --case."""
    return [c for c in cases if not args.case or any(part in c.name for part in args.case)]


def device_under_test(args: argparse.Namespace, parser: argparse.ArgumentParser) -> tuple[str, int, int]:
    """The device type (--device, else the active backend's) and the rounds and repeats to run (one each
    with --quick)."""
    import torch_backend

    active = torch_backend.active_backend()
    device_name = args.device or (active.name if active else None)
    if device_name is None:
        parser.error("no backend is active; pass --device")
    return device_name, *((1, 1) if args.quick else (args.rounds, args.repeats))


def write_results(results: list, path: str) -> Path:
    """The results (dataclasses with a ``met`` property) as JSON at ``path``, its folder made."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps([asdict(r) | {"met": r.met} for r in results], indent=2))
    return out


def measure(cases: list[SeparateCase], device_name: str, rounds: int, repeats: int) -> list[Result]:
    """Device and CPU times per step (medians over rounds) and their ratio, which must stay <= the target,
    for cases that share their processes."""
    names = [case.name for case in cases]
    timings = alternate("torch_backend.bench.separate", names, device_name, "cpu", rounds, repeats)
    return [Result(c.name, *t, c.target, lower_is_better=True) for c, t in zip(cases, timings, strict=True)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    add_process_arguments(parser, pairs="device/CPU", repeats=7, json_name="separate.json")
    args = parser.parse_args(argv)
    if args.worker:
        for name in args.worker:
            print(worker(name, args.device, args.repeats), flush=True)
        return 0
    device_name, rounds, repeats = device_under_test(args, parser)
    groups = process_groups(selected_cases(CASES, args), args.quick)
    results = [r for group in groups for r in measure(group, device_name, rounds, repeats)]
    # extra: what the device path costs beyond CPU eager per step / op. With fake's kernels inline
    # (TORCH_BACKEND_FAKE_INLINE_KERNELS=1: no hand-off to a stream thread, 16-element arithmetic) it is
    # core's own host cost per op, the figure to set beside a device's launch cost.
    header = f"{'case (separate processes)':<34}{device_name + ' (us)':>12}{'cpu (us)':>12}{'extra (us)':>12}"
    print(f"{header}{'ratio':>8}{'spread':>8}{'target':>10}  met?")
    for r in results:
        print(
            f"{r.case:<34}{r.device_s * 1e6:>12.2f}{r.cpu_s * 1e6:>12.2f}{(r.device_s - r.cpu_s) * 1e6:>12.2f}"
            f"{r.ratio:>8.2f}{r.spread:>8.2f}{'<=':>4}{r.target:>6.2f}  {'yes' if r.met else 'NO'}"
        )
    out = write_results(results, args.json)
    chart = out.with_suffix(".png")
    xlabel = f"{device_name} vs CPU, separate processes (device time / CPU time, lower is better)"
    if plot(results, chart, xlabel):
        print(f"wrote {chart}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
