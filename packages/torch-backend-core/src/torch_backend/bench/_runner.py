"""Measuring cases side by side: warm-up, interleaved repeats, synchronised clocks, medians."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Case:
    """One benchmark. ``make(device)`` prepares inputs and returns the callable to time.

    ``lower_is_better``: the ratio is device time / CPU time and must be <= target;
    otherwise it is CPU time / device time (a throughput ratio) and must be >= target.
    """

    name: str
    make: Callable[[torch.device], Callable[[], object]]
    target: float
    lower_is_better: bool = True
    description: str = ""


@dataclass(frozen=True)
class Result:
    case: str
    device_s: float
    cpu_s: float
    ratio: float
    spread: float
    target: float
    lower_is_better: bool

    @property
    def met(self) -> bool:
        return self.ratio <= self.target if self.lower_is_better else self.ratio >= self.target


def _sync(device: torch.device) -> None:
    if device.type != "cpu":
        torch.accelerator.synchronize(device)


def _time_once(fn: Callable[[], object], device: torch.device) -> float:
    _sync(device)
    start = time.perf_counter()
    fn()
    _sync(device)
    return time.perf_counter() - start


def ops_by_host_time(fn: Callable[[], object], device: torch.device) -> str:
    """``fn`` run once under PyTorch's profiler (host activity only, synchronised before and after), as a
    table of its ops and calls by total host time."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _time_once(fn, device)
    # By total time: under launch blocking a kernel's time is its launch call's, a child of the op.
    return prof.key_averages().table(sort_by="cpu_time_total", row_limit=30)


def measure(case: Case, device: torch.device, repeats: int) -> Result:
    cpu = torch.device("cpu")
    on_device, on_cpu = case.make(device), case.make(cpu)
    for fn, where in ((on_device, device), (on_cpu, cpu)):
        _time_once(fn, where)  # warm-up: caches, lazy init, page faults
    device_times, cpu_times, ratios = [], [], []
    for _ in range(repeats):
        d = _time_once(on_device, device)
        c = _time_once(on_cpu, cpu)
        device_times.append(d)
        cpu_times.append(c)
        ratios.append(d / c if case.lower_is_better else c / d)
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return Result(
        case=case.name,
        device_s=statistics.median(device_times),
        cpu_s=statistics.median(cpu_times),
        ratio=statistics.median(ratios),
        spread=quartiles[2] - quartiles[0],
        target=case.target,
        lower_is_better=case.lower_is_better,
    )


def run_cases(cases: list[Case], device: torch.device, repeats: int) -> list[Result]:
    return [measure(case, device, repeats) for case in cases]
