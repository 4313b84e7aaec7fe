"""``python -m torch_backend.bench.hotloop CASE``: one benchmark case in a steady loop, for profilers.

Runs the case's callable on one device for ``--seconds`` after a warm-up, so a
sampling profiler started with a delay (``perf record -D``, ``py-spy --delay``)
sees only the steady state, not the import. See docs/bench/profile.md.
"""

from __future__ import annotations

import argparse
import time

import torch

from torch_backend.bench.cases import CASES
from torch_backend.bench.separate import CASES as SEPARATE_CASES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("case", help="a substring of a case name of either benchmark, e.g. 'add, 16' or 'x * 2'")
    parser.add_argument("--device", default=None, help="device type (default: the active backend)")
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    import torch_backend

    device_type = args.device or torch_backend.active_backend().name
    case = next(c for c in [*CASES, *SEPARATE_CASES] if args.case in c.name)
    device = torch.device(device_type, 0) if device_type != "cpu" else torch.device("cpu")
    work = case.make(device)

    def fn() -> None:  # synchronised like the benchmark: async copies must not pile up
        work()
        if device.type != "cpu":
            torch.accelerator.synchronize(device)

    fn()
    print(f"hotloop: {case.name} on {device_type} for {args.seconds:.0f} s", flush=True)
    calls, end = 0, time.monotonic() + args.seconds
    while time.monotonic() < end:
        fn()
        calls += 1
    print(f"hotloop: {calls} calls, {args.seconds / calls * 1e3:.3f} ms per call", flush=True)


if __name__ == "__main__":
    main()
