"""``python -m torch_backend.bench.compile``: torch.compile's speedup over eager, device beside CPU.

For each workload (a training step: forward, backward, optimizer), the eager
and the compiled (Inductor, ``mode="default"``) step are timed on the device
and on the CPU, interleaved in one run. Reported: each side's speedup (eager
time / compiled time) and their ratio (device speedup / CPU speedup: 1.0 means
Inductor gains as much on the device as on the CPU), and which code generator
Inductor used for the device (``triton``, ``host-kernels``: C++, ``own``, or
``none``: eager kernels). With no backend active, ``--device cuda`` measures
PyTorch's own CUDA the same way: run both, in separate processes, on one GPU
to set a backend's compiled steps beside compiled CUDA.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from torch_backend.bench._runner import _time_once, ops_by_host_time

Step = Callable[[], object]


def mlp() -> tuple[nn.Module, tuple[int, ...]]:
    return nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(), nn.Linear(512, 10)), (64, 256)


def transformer() -> tuple[nn.Module, tuple[int, ...]]:
    layer = nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, dropout=0.0, batch_first=True)
    return nn.Sequential(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), nn.Linear(64, 10)), (8, 32, 64)


WORKLOADS: dict[str, Callable[[], tuple[nn.Module, tuple[int, ...]]]] = {
    "MLP train step": mlp,
    "Transformer train step": transformer,
}


def make_step(build: Callable[[], tuple[nn.Module, tuple[int, ...]]], device: torch.device, compiled: bool) -> Step:
    torch.manual_seed(0)
    model, shape = build()
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, foreach=False)
    inputs = torch.randn(*shape, device=device)
    forward = torch.compile(model) if compiled else model

    def step() -> None:
        optimizer.zero_grad()
        forward(inputs).square().mean().backward()
        optimizer.step()

    return step


def code_generator(device: torch.device) -> str:
    """Which of core's code generators Inductor uses for ``device`` (PyTorch's own device: ``inductor``)."""
    import torch_backend
    from torch_backend._compile.inductor import codegen_kind

    backend = torch_backend.active_backend()
    return codegen_kind(backend) if backend is not None and backend.name == device.type else "inductor"


def measure(name: str, device: torch.device, repeats: int, iterations: int) -> dict[str, float | str]:
    cpu = torch.device("cpu")
    build = WORKLOADS[name]
    sides = [(where, compiled) for where in (device, cpu) for compiled in (False, True)]
    steps = {(where.type, compiled): make_step(build, where, compiled) for where, compiled in sides}
    for step in steps.values():  # compile and warm up
        for _ in range(3):
            step()

    def timed(key: tuple[str, bool]) -> float:
        where = device if key[0] == device.type else cpu
        return _time_once(lambda: [steps[key]() for _ in range(iterations)], where) / iterations

    times: dict[tuple[str, bool], list[float]] = {key: [] for key in steps}
    for _ in range(repeats):
        for key in steps:
            times[key].append(timed(key))
    median = {key: statistics.median(values) for key, values in times.items()}
    device_speedup = median[(device.type, False)] / median[(device.type, True)]
    cpu_speedup = median[("cpu", False)] / median[("cpu", True)]
    return {
        "workload": name,
        "device": device.type,
        "code_generator": code_generator(device),
        "device_eager_ms": median[(device.type, False)] * 1e3,
        "device_compiled_ms": median[(device.type, True)] * 1e3,
        "cpu_eager_ms": median[("cpu", False)] * 1e3,
        "cpu_compiled_ms": median[("cpu", True)] * 1e3,
        "device_speedup": device_speedup,
        "cpu_speedup": cpu_speedup,
        "speedup_ratio": device_speedup / cpu_speedup,
    }


def profile(name: str, device: torch.device, iterations: int) -> str:
    """The compiled step's ops and calls by host time on ``device``, after compiling and warming up: where a
    compiled step spends what the eager one does not (wrapper code, allocations, launches)."""
    step = make_step(WORKLOADS[name], device, compiled=True)
    for _ in range(3):  # compile and warm up, as measure() does
        step()
    table = ops_by_host_time(lambda: [step() for _ in range(iterations)], device)
    return f"== {name}, compiled, on {device.type} ({iterations} steps)\n{table}"


def main(argv: list[str] | None = None) -> int:
    import torch_backend

    parser = argparse.ArgumentParser(description=__doc__)
    active = torch_backend.active_backend()
    parser.add_argument("--device", default=active.name if active else None)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--iterations", type=int, default=5, help="steps per timing")
    parser.add_argument("--json", default="bench-results/compile.json")
    parser.add_argument(
        "--quick", action="store_true", help="smoke mode for CI: figures meaningless, the first workload only"
    )
    parser.add_argument(
        "--workload", action="append", help="only the workloads whose name contains this (repeatable; default all)"
    )
    parser.add_argument("--profile", action="store_true", help="instead of timing: each compiled step's ops by time")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.iterations = 1, 1
    if args.device is None:
        parser.error("no backend is active; pass --device")
    device = torch.device(args.device, 0)
    names = [name for name in WORKLOADS if not args.workload or any(part in name for part in args.workload)]
    if not names:
        parser.error(f"no workload matches {args.workload}; the workloads: {', '.join(WORKLOADS)}")
    if args.quick:
        # A smoke run checks that the benchmark runs: every workload takes the same path, and compiling one
        # (on both devices) is most of the run's time.
        names = names[:1]
    if args.profile:
        for name in names:
            print(profile(name, device, args.iterations))
        return 0
    rows = [measure(name, device, args.repeats, args.iterations) for name in names]
    kind = device.type
    print(
        f"{'workload':<24}{kind + ' eager':>12}{kind + ' compiled':>15}{'cpu eager':>11}{'cpu compiled':>14}"
        f"{kind + ' speedup':>14}{'cpu speedup':>13}{'ratio':>7}  code generator"
    )
    for r in rows:
        print(
            f"{r['workload']:<24}{r['device_eager_ms']:>10.2f}ms{r['device_compiled_ms']:>13.2f}ms"
            f"{r['cpu_eager_ms']:>9.2f}ms{r['cpu_compiled_ms']:>12.2f}ms{r['device_speedup']:>13.2f}x"
            f"{r['cpu_speedup']:>12.2f}x{r['speedup_ratio']:>7.2f}  {r['code_generator']}"
        )
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
