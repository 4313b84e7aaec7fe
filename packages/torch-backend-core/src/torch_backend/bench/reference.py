"""``python -m torch_backend.bench.reference --device gpu --reference cuda``: a backend against another device.

The question it answers: how does this backend compare with PyTorch's own
backend for the same hardware (the gpu backend against ``cuda`` on one GPU)?
Every case runs in two processes per round, one using only the backend's
device and one using only the reference with no backend active
(``TORCH_BACKEND=none``): PyTorch's autograd engine serves one accelerator
type per process (pytorch/pytorch#161129), and neither side shares a process
with the other's threads. Ratios are backend time / reference time per round,
reported as median and interquartile spread. ``--reference fallback`` compares
the backend with itself, every kernel forced off (``TORCH_BACKEND_FORCE_FALLBACK='.'``):
what its kernels gain over the CPU fallback. ``--quick`` shrinks every case
to smoke-test sizes (CI runs it as fake against the CPU): its figures mean
nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from torch_backend.bench._chart import plot
from torch_backend.bench.models import TinyGPT, resnet18_training, small_cnn
from torch_backend.bench.separate import (
    FALLBACK,
    FORCED_FALLBACK_ENV,
    add_process_arguments,
    alternate,
    device_under_test,
    process_groups,
    selected_cases,
)

Step = Callable[[], object]
MODULE = "torch_backend.bench.reference"


@dataclass(frozen=True)
class Sizes:
    """Case sizes: the issue's on a GPU, tiny for the smoke run."""

    elements: int
    matmul: int
    copy_bytes: int
    mlp: tuple[int, int, int]  # width, hidden, batch
    cnn: tuple[int, int, int]  # channels, batch, image side
    gpt: tuple[int, int, int, int, int]  # model width, layers, sequence, batch, vocabulary
    resnet: tuple[int, int, int, int]  # width (64: ResNet-18's), batch, small image side, large image side
    conv: tuple[int, int, int]  # channels in and out, batch, image side


FULL = Sizes(
    64 << 20, 4096, 256 << 20, (1024, 4096, 512), (32, 64, 32), (512, 6, 256, 16, 8192), (64, 8, 32, 224), (64, 32, 56)
)
QUICK = Sizes(1 << 12, 64, 1 << 16, (32, 64, 16), (4, 2, 8), (32, 2, 16, 2, 64), (4, 2, 16, 32), (4, 2, 8))


def _repeat(fn: Step, times: int) -> Step:
    def run() -> None:
        for _ in range(times):
            fn()

    return run


def add_small(device: torch.device, sizes: Sizes) -> Step:
    x, y = torch.randn(16, device=device), torch.randn(16, device=device)
    return _repeat(lambda: torch.add(x, y), 1000)


def add_large(device: torch.device, sizes: Sizes) -> Step:
    x, y = torch.randn(sizes.elements, device=device), torch.randn(sizes.elements, device=device)
    out = torch.empty_like(x)
    return _repeat(lambda: torch.add(x, y, out=out), 10)


def sum_large(device: torch.device, sizes: Sizes) -> Step:
    x = torch.randn(sizes.elements, device=device)
    return _repeat(lambda: x.sum(), 10)


def matmul(dtype: torch.dtype) -> Callable[[torch.device, Sizes], Step]:
    def make(device: torch.device, sizes: Sizes) -> Step:
        a = torch.randn(sizes.matmul, sizes.matmul, device=device, dtype=dtype)
        b = torch.randn(sizes.matmul, sizes.matmul, device=device, dtype=dtype)
        return _repeat(lambda: a @ b, 10)

    return make


def pinned_copy(direction: str) -> Callable[[torch.device, Sizes], Step]:
    def make(device: torch.device, sizes: Sizes) -> Step:
        count = sizes.copy_bytes // 4
        host = torch.empty(count, pin_memory=device.type != "cpu")
        on_device = torch.empty(count, device=device)
        if direction == "h2d":
            return _repeat(lambda: on_device.copy_(host, non_blocking=True), 5)
        return _repeat(lambda: host.copy_(on_device, non_blocking=True), 5)

    return make


def allocation(device: torch.device, sizes: Sizes) -> Step:
    return _repeat(lambda: torch.empty(1 << 20, device=device), 1000)


def _train(model: nn.Module, step_inputs: Callable[[], tuple[torch.Tensor, torch.Tensor]], loss_fn: nn.Module) -> Step:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    inputs, targets = step_inputs()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(inputs), targets).backward()
        optimizer.step()

    return _repeat(step, 5)


def mlp_adamw(device: torch.device, sizes: Sizes) -> Step:
    torch.manual_seed(0)
    width, hidden, batch = sizes.mlp
    model = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, width)).to(device)
    data = (torch.randn(batch, width, device=device), torch.randn(batch, width, device=device))
    return _train(model, lambda: data, nn.MSELoss())


def cnn(device: torch.device, sizes: Sizes) -> Step:
    torch.manual_seed(0)
    channels, batch, side = sizes.cnn
    model = small_cnn(channels).to(device)
    data = (torch.randn(batch, 3, side, side, device=device), torch.randint(0, 10, (batch,), device=device))
    return _train(model, lambda: data, nn.CrossEntropyLoss())


def gpt(device: torch.device, sizes: Sizes) -> Step:
    torch.manual_seed(0)
    width, layers, sequence, batch, vocab = sizes.gpt
    model = TinyGPT(vocab, width, layers, sequence).to(device)
    ids = torch.randint(0, vocab, (batch, sequence + 1), device=device)
    data = (ids[:, :-1].contiguous(), ids[:, 1:].flatten())
    return _train(model, lambda: data, nn.CrossEntropyLoss())


def resnet(large: bool) -> Callable[[torch.device, Sizes], Step]:
    """A ResNet-18 training step on a batch of small or large images."""

    def make(device: torch.device, sizes: Sizes) -> Step:
        width, batch, small_side, large_side = sizes.resnet
        return resnet18_training(device, width, batch, large_side if large else small_side)

    return make


def conv3x3(device: torch.device, sizes: Sizes) -> Step:
    """One 3x3 convolution forward and backward (input, weight and bias gradients), ResNet's commonest layer."""
    torch.manual_seed(0)
    channels, batch, side = sizes.conv
    conv = nn.Conv2d(channels, channels, 3, padding=1).to(device)
    images = torch.randn(batch, channels, side, side, device=device, requires_grad=True)
    return _repeat(lambda: conv(images).sum().backward(), 10)


@dataclass(frozen=True)
class ReferenceCase:
    name: str
    make: Callable[[torch.device, Sizes], Step]
    target: float  # backend time / reference time, at most; NaN: reported only


CASES = [
    ReferenceCase("add, 16 elements (x1000)", add_small, 1.5),
    ReferenceCase("add, 64M elements (x10)", add_large, 1.1),
    ReferenceCase("sum, 64M elements (x10)", sum_large, 1.1),
    ReferenceCase("matmul 4096 float32 (x10)", matmul(torch.float32), 1.1),
    ReferenceCase("matmul 4096 bfloat16 (x10)", matmul(torch.bfloat16), 1.1),
    ReferenceCase("pinned H2D 256 MiB (x5)", pinned_copy("h2d"), math.nan),
    ReferenceCase("pinned D2H 256 MiB (x5)", pinned_copy("d2h"), math.nan),
    ReferenceCase("allocate 4 MiB (x1000)", allocation, math.nan),
    ReferenceCase("MLP+AdamW step 1024-4096-1024 b512 (x5)", mlp_adamw, 1.3),
    ReferenceCase("CNN+BatchNorm step (x5)", cnn, 1.5),
    ReferenceCase("GPT-style Transformer step (x5)", gpt, 2.0),
    # Convolution issue's cases: cuDNN's convolutions against CUDA's (which calls cuDNN too).
    ReferenceCase("conv 3x3 64ch b32 56x56 fwd+bwd (x10)", conv3x3, 1.5),
    ReferenceCase("ResNet-18 step b8 32x32 (x3)", resnet(large=False), 1.5),
    ReferenceCase("ResNet-18 step b8 224x224 (x3)", resnet(large=True), 1.5),
]


@dataclass(frozen=True)
class ReferenceResult:
    case: str
    device_s: float  # per timing (the case's repetitions), median over rounds
    reference_s: float
    ratio: float
    spread: float
    target: float

    @property
    def met(self) -> bool:
        return math.isnan(self.target) or self.ratio <= self.target


def warm_step(case_name: str, device_name: str, quick: bool) -> tuple[Step, torch.device]:
    """One case's step on one device, in this process, run once (caches, lazy init, page faults)."""
    from torch_backend.bench._runner import _time_once

    case = next(c for c in CASES if c.name == case_name)
    device = torch.device(device_name, 0) if device_name != "cpu" else torch.device("cpu")
    step = case.make(device, QUICK if quick else FULL)
    _time_once(step, device)
    return step, device


def worker(case_name: str, device_name: str, repeats: int, quick: bool) -> float:
    """Best of ``repeats`` timings of one case on one device, in this process."""
    from torch_backend.bench._runner import _time_once

    step, device = warm_step(case_name, device_name, quick)
    return min(_time_once(step, device) for _ in range(repeats))


def measure(
    cases: list[ReferenceCase], device_name: str, reference: str, rounds: int, repeats: int, quick: bool
) -> list[ReferenceResult]:
    """The cases that share their processes (process_groups), timed on both devices."""
    extra = ("--quick",) if quick else ()
    timings = alternate(MODULE, [case.name for case in cases], device_name, reference, rounds, repeats, *extra)
    return [ReferenceResult(c.name, *t, c.target) for c, t in zip(cases, timings, strict=True)]


LAUNCH_BLOCKING = {"TORCH_BACKEND_LAUNCH_BLOCKING": "1", "CUDA_LAUNCH_BLOCKING": "1"}


def profile_worker(case_name: str, device_name: str, quick: bool) -> str:
    """One step of a case under PyTorch's profiler, as a table of ops by total host time. Run with launch
    blocking (``--profile`` sets it for both devices), so each op's time includes its kernels' execution:
    a per-op device profile without device activity collection, comparable across backends."""
    from torch_backend.bench._runner import ops_by_host_time

    step, device = warm_step(case_name, device_name, quick)
    return ops_by_host_time(step, device)


def profile_case(case: ReferenceCase, device_name: str, reference: str, quick: bool) -> bool:
    """Prints the op tables of one case on the backend's device and on the reference; False if one failed."""
    ok = True
    sides = [(device_name, device_name, {}), (reference, "none", {})]
    if reference == FALLBACK:
        sides[1] = (device_name, device_name, FORCED_FALLBACK_ENV)
    for name, backend, forced in sides:
        command = [sys.executable, "-m", MODULE, "--profile-worker", case.name, "--device", name]
        env = os.environ | LAUNCH_BLOCKING | {"TORCH_BACKEND": backend} | forced
        out = subprocess.run([*command, *(["--quick"] if quick else [])], capture_output=True, text=True, env=env,
                             timeout=900, check=False)  # fmt: skip
        print(f"== {case.name} on {name}, launch blocking (an op's time includes its kernels')", flush=True)
        print(out.stdout if out.returncode == 0 else f"FAILED ({out.returncode}): {out.stderr[-3000:]}", flush=True)
        ok = ok and out.returncode == 0
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_process_arguments(parser, pairs="device/reference", repeats=5, json_name="reference.json")
    parser.add_argument(
        "--reference",
        default="cuda",
        help=f"the device to compare with (default: cuda); '{FALLBACK}': the backend with its kernels forced off",
    )
    parser.add_argument(
        "--profile", action="store_true", help="instead of timing: each case's ops by time on both devices"
    )
    parser.add_argument("--profile-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        for name in args.worker:
            print(worker(name, args.device, args.repeats, args.quick), flush=True)
        return 0
    if args.profile_worker:
        print(profile_worker(args.profile_worker, args.device, args.quick))
        return 0
    device_name, rounds, repeats = device_under_test(args, parser)
    cases = selected_cases(CASES, args)
    if args.profile:
        return 0 if all([profile_case(c, device_name, args.reference, args.quick) for c in cases]) else 1
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    machine = torch.cuda.get_device_name(0) if args.reference == "cuda" and torch.cuda.is_available() else "n/a"
    # Each row as soon as it is measured, the JSON rewritten after each case (a run cut short by a time
    # limit keeps what it measured), and a case that fails does not lose the others' figures.
    print(f"{'case':<42}{device_name + ' (s)':>12}{args.reference + ' (s)':>12}{'ratio':>8}{'spread':>8}  target")
    results, failures = [], []
    for group in process_groups(cases, args.quick):
        try:
            measured = measure(group, device_name, args.reference, rounds, repeats, args.quick)
        except RuntimeError as error:
            for case in group:
                print(f"{case.name:<42}  FAILED: {error}", flush=True)
                failures.append(case.name)
            measured = []
        for r in measured:
            results.append(r)
            target = "reported" if math.isnan(r.target) else f"<= {r.target:.2f} {'met' if r.met else 'MISSED'}"
            print(f"{r.case:<42}{r.device_s:>12.6f}{r.reference_s:>12.6f}{r.ratio:>8.2f}{r.spread:>8.2f}  {target}",
                  flush=True)  # fmt: skip
        out.write_text(json.dumps({"reference": args.reference, "device": device_name, "machine": machine,
                                   "torch": torch.__version__, "quick": args.quick, "failed": failures,
                                   "results": [asdict(r) | {"met": r.met} for r in results]},
                                  indent=2))  # fmt: skip
    xlabel = f"{device_name} vs {args.reference}, separate processes (time ratio, lower is better)"
    if results and plot(results, out.with_suffix(".png"), xlabel):
        print(f"wrote {out.with_suffix('.png')}")
    print(f"wrote {out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
