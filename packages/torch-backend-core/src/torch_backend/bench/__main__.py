"""``python -m torch_backend.bench``: run the cases and print the side-by-side table."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

import torch

from torch_backend.bench._runner import run_cases
from torch_backend.bench.cases import CASES


def main(argv: list[str] | None = None) -> int:
    import torch_backend

    parser = argparse.ArgumentParser(description=__doc__)
    active = torch_backend.active_backend()
    parser.add_argument(
        "--device", default=active.name if active else None, help="device type (default: active backend)"
    )
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="smoke mode for CI: 2 repeats, figures meaningless")
    parser.add_argument("--json", help="also write the results as JSON here")
    parser.add_argument("--case", action="append", help="run only cases whose name contains this")
    args = parser.parse_args(argv)
    if args.device is None:
        parser.error("no backend is active; pass --device")
    device = torch.device(args.device, 0)
    repeats = 2 if args.quick else args.repeats
    cases = [c for c in CASES if not args.case or any(k in c.name for k in args.case)]
    results = run_cases(cases, device, repeats)
    print(f"{'case':<28}{device.type + ' (s)':>12}{'cpu (s)':>12}{'ratio':>8}{'spread':>8}{'target':>9}  met?")
    for r in results:
        sign = "<=" if r.lower_is_better else ">="
        print(
            f"{r.case:<28}{r.device_s:>12.5f}{r.cpu_s:>12.5f}{r.ratio:>8.2f}{r.spread:>8.2f}"
            f"{sign:>4}{r.target:>5.2f}  {'yes' if r.met else 'NO'}"
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump([asdict(r) | {"met": r.met} for r in results], out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
