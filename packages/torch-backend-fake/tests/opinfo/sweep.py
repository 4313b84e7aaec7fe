"""Runs PyTorch's OpInfo database on a device against CPU (float32 samples).

For each (op, sample): the CPU result and the device result must be equal
under torch.testing.assert_close; for ops supporting autograd the gradients of
the inputs must be equal too. Random ops are compared under the same seed
(device generators share the CPU's algorithm). Used by test_opinfo.py and by
`python sweep.py --device fake` for the full run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Iterator

import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.utils._pytree import tree_flatten, tree_map

SEED = 1234
# Ops returning uninitialised memory: values are arbitrary on any device (PyTorch's
# own device tests skip comparing them), so only shapes, strides and dtypes are.
UNINITIALISED = {"empty", "empty_like", "empty_permuted", "empty_strided", "new_empty", "new_empty_strided"}


def _to(device: str, value: object) -> object:
    return tree_map(
        lambda x: x.detach().to(device).requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else x, value
    )


def _float_outputs(result: object) -> list[torch.Tensor]:
    leaves, _ = tree_flatten(result)
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad]


def _run(op, sample, device: str) -> tuple[object, list[torch.Tensor | None]]:
    inputs = _to(device, (sample.input, sample.args, sample.kwargs))
    torch.manual_seed(SEED)
    result = op(inputs[0], *inputs[1], **inputs[2])
    grads: list[torch.Tensor | None] = []
    if op.supports_autograd:
        outs = _float_outputs(result)
        leaves = [t for t in tree_flatten(inputs)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
        if outs and leaves:
            total = sum(o.sum() for o in outs)
            grads = list(torch.autograd.grad(total, leaves, allow_unused=True))
    return result, grads


def check(op, sample, device: str) -> None:
    expected, expected_grads = _run(op, sample, "cpu")
    actual, actual_grads = _run(op, sample, device)
    to_cpu = lambda v: tree_map(lambda x: x.detach().cpu() if isinstance(x, torch.Tensor) else x, v)  # noqa: E731
    if op.name in UNINITIALISED:
        meta = lambda v: tree_map(lambda x: (x.shape, x.stride(), x.dtype) if isinstance(x, torch.Tensor) else x, v)  # noqa: E731
        assert meta(actual) == meta(expected), f"{meta(actual)} != {meta(expected)}"
        return
    torch.testing.assert_close(to_cpu(actual), to_cpu(expected), equal_nan=True, check_device=False)
    torch.testing.assert_close(to_cpu(actual_grads), to_cpu(expected_grads), equal_nan=True, check_device=False)


def op_names() -> list[str]:
    return sorted({f"{op.name}.{op.variant_test_name}".rstrip(".") for op in op_db})


def samples(names: set[str] | None = None) -> Iterator[tuple[str, object, object]]:
    for op in op_db:
        key = f"{op.name}.{op.variant_test_name}".rstrip(".")
        if names is not None and key not in names:
            continue
        if torch.float32 not in op.supported_dtypes("cpu"):
            continue
        try:
            generated = list(op.sample_inputs("cpu", torch.float32, requires_grad=op.supports_autograd))
        except Exception:
            continue
        for sample in generated:
            yield key, op, sample


def sweep(device: str, names: set[str] | None = None, trace: bool = False) -> dict[str, dict[str, int | str]]:
    """Per op: passed and failed sample counts and the first failure."""
    results: dict[str, dict[str, int | str]] = {}
    warnings.filterwarnings("ignore")
    for key, op, sample in samples(names):
        entry = results.setdefault(key, {"passed": 0, "failed": 0, "error": ""})
        if trace:
            print(f"running {key}", file=sys.stderr, flush=True)
        try:
            check(op, sample, device)
            entry["passed"] += 1
        except Exception as exc:
            entry["failed"] += 1
            if not entry["error"]:
                entry["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    return results


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="fake")
    parser.add_argument("--json", help="write per-op results here")
    parser.add_argument("--trace", action="store_true", help="print each op before running it (find crashes)")
    parser.add_argument("--known", help="known_failures.json: fail unless >= 99%% pass and failures match it")
    args = parser.parse_args()
    start = time.time()
    results = sweep(args.device, trace=args.trace)
    passed = sum(r["passed"] for r in results.values())
    failed = sum(r["failed"] for r in results.values())
    rate = 100 * passed / max(1, passed + failed)
    print(f"{passed} passed, {failed} failed ({rate:.2f}%) in {time.time() - start:.0f}s")
    for key, r in sorted(results.items()):
        if r["failed"]:
            print(f"  {key}: {r['failed']} failed / {r['passed']} passed: {r['error']}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1, sort_keys=True)
    if args.known:
        with open(args.known) as known_file:
            known = set(json.load(known_file))
        failing = {key for key, r in results.items() if r["failed"]}
        problems = []
        if rate < 99.0:
            problems.append(f"pass rate {rate:.2f}% is below 99%")
        if failing - known:
            problems.append(f"unlisted failures: {sorted(failing - known)}")
        if known - failing:
            problems.append(f"listed ops that pass now: {sorted(known - failing)}")
        for problem in problems:
            print("FAIL:", problem)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
