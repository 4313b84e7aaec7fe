"""``python -m torch_backend.bench``: run the cases side by side and print, save and plot the ratios."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

import torch

from torch_backend.bench._chart import plot
from torch_backend.bench._import_cost import import_cost_ms
from torch_backend.bench._runner import Result, run_cases
from torch_backend.bench.cases import CASES


def print_table(results: list[Result], device: str) -> None:
    print(f"{'case':<28}{device + ' (s)':>12}{'cpu (s)':>12}{'ratio':>8}{'spread':>8}{'target':>10}  met?")
    for r in results:
        sign = "<=" if r.lower_is_better else ">="
        print(
            f"{r.case:<28}{r.device_s:>12.5f}{r.cpu_s:>12.5f}{r.ratio:>8.2f}{r.spread:>8.2f}"
            f"{sign:>4}{r.target:>6.2f}  {'yes' if r.met else 'NO'}"
        )


def main(argv: list[str] | None = None) -> int:
    import torch_backend

    parser = argparse.ArgumentParser(description=__doc__)
    active = torch_backend.active_backend()
    default_device = active.name if active else None
    parser.add_argument("--device", default=default_device, help="device type (default: the active backend)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="smoke mode for CI: 2 repeats, figures meaningless")
    parser.add_argument("--json", default="bench-results/bench.json", help="results file; the PNG chart goes beside it")
    parser.add_argument("--case", action="append", help="run only cases whose name contains this")
    args = parser.parse_args(argv)
    if args.device is None:
        parser.error("no backend is active; pass --device")
    device = torch.device(args.device, 0)
    repeats = 2 if args.quick else args.repeats
    cases = [c for c in CASES if not args.case or any(k in c.name for k in args.case)]
    results = run_cases(cases, device, repeats)
    if not args.case or any(k in "autoload import cost" for k in args.case):
        cost, spread = import_cost_ms(min(repeats, 7))
        results.append(Result("autoload import cost (ms)", cost / 1000, 0.0, cost, spread, 50.0, True))
    print_table(results, device.type)
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps([asdict(r) | {"met": r.met} for r in results], indent=2))
    chart = out.with_suffix(".png")
    ratios = [r for r in results if not r.case.startswith("autoload")]
    xlabel = f"{device.type} vs CPU (time cases: device/CPU, lower is better; throughput: higher is better)"
    if plot(ratios, chart, xlabel):
        print(f"wrote {out} and {chart}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
