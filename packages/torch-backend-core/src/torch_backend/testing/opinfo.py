"""Runs PyTorch's OpInfo database on a device against CPU (float32 samples).

For each (op, sample): the CPU result and the device result must be equal
under torch.testing.assert_close; for ops supporting autograd the gradients of
the inputs must be equal too (forward and backward are reported apart). Random ops are compared under the same seed
(device generators share the CPU's algorithm). Used by the kit's test_opinfo.py and by
`TORCH_BACKEND=NAME python -m torch_backend.testing.opinfo --known FILE` for the full run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator

import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.opinfo.core import OpInfo, SampleInput
from torch.utils._pytree import tree_flatten, tree_map

from torch_backend.testing import DEFAULT_KNOWN_FAILURES, device_type, dropout_on_device, load_known_failures, quiet

SEED = 1234
# Ops returning uninitialised memory: values are arbitrary on any device (PyTorch's
# own device tests skip comparing them), so only shapes, strides and dtypes are.
UNINITIALISED = {"empty", "empty_like", "empty_permuted", "empty_strided", "new_empty", "new_empty_strided"}


def _to(device: str, value: object, float64: bool = False) -> object:
    """`value`'s tensors as new leaves on `device` (its float32 ones widened to float64 with `float64`)."""

    def move(x: torch.Tensor) -> torch.Tensor:
        dtype = torch.float64 if float64 and x.dtype == torch.float32 else x.dtype
        return x.detach().to(device, dtype).requires_grad_(x.requires_grad)

    return tree_map(lambda x: move(x) if isinstance(x, torch.Tensor) else x, value)


def _float_outputs(result: object) -> list[torch.Tensor]:
    leaves, _ = tree_flatten(result)
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad]


# With a dropout kernel on the device, dropout draws its masks from the
# device's own generator (as a GPU's does), not from the CPU's mt19937: these
# ops' samples that draw masks cannot equal CPU's. Such a sample is checked for
# what holds instead (same seed, same result; CPU's shapes and dtypes) and
# counted apart, outside the pass rates.
DEVICE_RNG_OPS = {
    "nn.functional.dropout",
    "nn.functional.multi_head_attention_forward",
    "nn.functional.scaled_dot_product_attention",
}


class DeviceRandomSample(Exception):  # noqa: N818 (an outcome, not an error)
    """The sample draws from the device's own generator: reproducible, but not CPU's values."""


class BackwardMismatchError(AssertionError):
    """The forward results agree; the gradients differ (or their computation failed)."""


def _forward(op: OpInfo, sample: SampleInput, device: str, float64: bool = False) -> tuple[object, object]:
    inputs = _to(device, (sample.input, sample.args, sample.kwargs), float64)
    torch.manual_seed(SEED)
    return inputs, op(inputs[0], *inputs[1], **inputs[2])


def _grads(op: OpInfo, inputs: object, result: object) -> list[torch.Tensor | None] | None:
    """Gradients of the inputs, or None when the op or sample has none."""
    if not op.supports_autograd:
        return None
    outs = _float_outputs(result)
    leaves = [t for t in tree_flatten(inputs)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
    if not (outs and leaves):
        return None
    total = sum(o.sum() for o in outs)
    return list(torch.autograd.grad(total, leaves, allow_unused=True))


def check(op: OpInfo, sample: SampleInput, device: str) -> bool:
    """Compares one sample on `device` with CPU, forward then backward.

    Returns whether gradients were compared; raises on a forward difference, and
    BackwardMismatchError when only the gradients differ.
    """
    to_cpu = lambda v: tree_map(lambda x: x.detach().cpu() if isinstance(x, torch.Tensor) else x, v)  # noqa: E731
    cpu_inputs, expected = _forward(op, sample, "cpu")
    inputs, actual = _forward(op, sample, device)
    if op.name in UNINITIALISED:
        meta = lambda v: tree_map(lambda x: (x.shape, x.stride(), x.dtype) if isinstance(x, torch.Tensor) else x, v)  # noqa: E731
        assert meta(actual) == meta(expected), f"{meta(actual)} != {meta(expected)}"
        return False
    actual_on_cpu, expected_on_cpu = to_cpu(actual), to_cpu(expected)
    try:
        torch.testing.assert_close(actual_on_cpu, expected_on_cpu, equal_nan=True, check_device=False)
    except AssertionError:
        if op.name in DEVICE_RNG_OPS and dropout_on_device():
            _check_device_random(op, sample, device, actual_on_cpu, expected_on_cpu)
        reference = lambda: _forward(op, sample, "cpu", float64=True)[1]  # noqa: E731
        if not _no_less_accurate(actual_on_cpu, expected_on_cpu, reference):
            raise
    try:
        expected_grads = _grads(op, cpu_inputs, expected)
        if expected_grads is None:
            return False
        actual_grads, expected_grads = to_cpu(_grads(op, inputs, actual)), to_cpu(expected_grads)
        try:
            torch.testing.assert_close(actual_grads, expected_grads, equal_nan=True, check_device=False)
        except AssertionError:
            reference = lambda: _grads(op, *_forward(op, sample, "cpu", float64=True))  # noqa: E731
            if not _no_less_accurate(actual_grads, expected_grads, reference):
                raise
    except Exception as exc:
        raise BackwardMismatchError(f"backward: {type(exc).__name__}: {exc}") from exc
    return True


# A device result that differs from CPU's float32 result beyond float32's tolerance still passes when it is
# no farther from the float64 result than CPU's own (with Inductor's accuracy rule's margin, torch._dynamo's
# `same(..., fp64_ref=...)`): the two then merely sum in different orders. Which order CPU's BLAS takes
# depends on the machine's vector instructions (AVX-512 or not), so without this rule the known-failure
# lists held machine-dependent entries (lstsq's and multi_dot's gradients, a layer norm's exact zero).
ACCURACY_MARGIN = 2.0
# Plus a few roundings at each element's own magnitude (CPU's largest error may sit at a smaller element),
ACCURACY_ULPS = 4
# and a tenth of float32's default atol (for a CPU result exactly equal to float64's).
ACCURACY_SLACK = 1e-6
# CPU's float32 result must agree with float64's this closely (PyTorch's own device-vs-CPU comparison,
# test_compare_cpu, allows 1e-3) for the float64 result to count as a reference at all.
REFERENCE_TOLERANCE = 1e-3


def _no_less_accurate(actual: object, expected: object, reference: Callable[[], object]) -> bool:
    """Whether `actual` (the device's result) is as accurate as `expected` (CPU's float32 result): same structure,
    shapes, dtypes and non-finite values, and per floating tensor a largest error from `reference()` (float64)
    within ACCURACY_MARGIN times CPU's largest, plus ACCURACY_ULPS roundings at the element and ACCURACY_SLACK."""
    actual_leaves, actual_spec = tree_flatten(actual)
    expected_leaves, expected_spec = tree_flatten(expected)
    if actual_spec != expected_spec:
        return False
    try:
        reference_leaves, _ = tree_flatten(reference())
    except Exception:
        return False  # no float64 result (an op without float64 support): the mismatch stands
    if len(reference_leaves) != len(expected_leaves):
        return False
    for device_value, cpu_value, exact in zip(actual_leaves, expected_leaves, reference_leaves, strict=True):
        if not (isinstance(cpu_value, torch.Tensor) and (cpu_value.is_floating_point() or cpu_value.is_complex())):
            both_tensors = isinstance(cpu_value, torch.Tensor) and isinstance(device_value, torch.Tensor)
            if not (torch.equal(device_value, cpu_value) if both_tensors else device_value == cpu_value):
                return False  # integers, booleans, None gradients and Python values: exactly equal or not at all
            continue
        if not isinstance(device_value, torch.Tensor) or not isinstance(exact, torch.Tensor):
            return False
        if device_value.dtype != cpu_value.dtype or not device_value.shape == cpu_value.shape == exact.shape:
            return False
        dtype = cpu_value.dtype
        wide = torch.complex128 if cpu_value.is_complex() else torch.float64
        device_value, cpu_value, exact = device_value.to(wide), cpu_value.to(wide), exact.detach().to(wide)
        finite = cpu_value.isfinite()
        if not torch.equal(finite, device_value.isfinite()) or not torch.equal(
            device_value[~finite].nan_to_num(), cpu_value[~finite].nan_to_num()
        ):
            return False
        finite &= exact.isfinite()
        if not finite.any():
            continue
        exact = exact[finite]
        device_error = (device_value[finite] - exact).abs()
        cpu_error = (cpu_value[finite] - exact).abs()
        # float64 computed something else (an op that reads the storage, which widening copied): no reference.
        if not bool((cpu_error <= REFERENCE_TOLERANCE * (1 + exact.abs())).all()):
            return False
        resolution = ACCURACY_ULPS * torch.finfo(dtype).eps * exact.abs()
        if not bool((device_error <= ACCURACY_MARGIN * cpu_error.max() + resolution + ACCURACY_SLACK).all()):
            return False
    return True


def _check_device_random(op: OpInfo, sample: SampleInput, device: str, actual: object, expected: object) -> None:
    """Raises DeviceRandomSample when the device result is reproducible with CPU's shapes and dtypes.

    (OpInfo seeds these ops itself, so another seed cannot be tried here; the
    backend's own kernel tests check the masks' statistics and scaling.)
    """
    meta = lambda v: tree_map(lambda x: (x.shape, x.dtype) if isinstance(x, torch.Tensor) else x, v)  # noqa: E731
    to_cpu = lambda v: tree_map(lambda x: x.detach().cpu() if isinstance(x, torch.Tensor) else x, v)  # noqa: E731
    again = to_cpu(_forward(op, sample, device)[1])
    same = all(
        torch.equal(x, y)
        for x, y in zip(tree_flatten(actual)[0], tree_flatten(again)[0], strict=True)
        if isinstance(x, torch.Tensor)
    )
    if meta(actual) == meta(expected) and same:
        raise DeviceRandomSample(op.name)


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
    """Per op: passed and failed sample counts (forward, and backward where gradients exist) and the first failure."""
    results: dict[str, dict[str, int | str]] = {}
    with quiet():
        for key, op, sample in samples(names):
            entry = results.setdefault(
                key,
                {"passed": 0, "failed": 0, "backward_passed": 0, "backward_failed": 0, "device_random": 0, "error": ""},
            )
            if trace:
                print(f"running {key}", file=sys.stderr, flush=True)
            try:
                if check(op, sample, device):
                    entry["backward_passed"] += 1
                entry["passed"] += 1
            except DeviceRandomSample:
                entry["device_random"] += 1
            except Exception as exc:
                if isinstance(exc, BackwardMismatchError):
                    entry["passed"] += 1
                    entry["backward_failed"] += 1
                else:
                    entry["failed"] += 1
                    # Its gradients could not be compared either.
                    entry["backward_failed"] += int(op.supports_autograd)
                if not entry["error"]:
                    entry["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    return results


def rate(passed: int, failed: int) -> float:
    return 100 * passed / max(1, passed + failed)


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m torch_backend.testing.opinfo",
        description="PyTorch's OpInfo database on the active backend's device against CPU (float32).",
    )
    parser.add_argument("--device", default=None, help="the device type (default: the active backend's)")
    parser.add_argument("--json", help="write per-op results here")
    parser.add_argument("--trace", action="store_true", help="print each op before running it (find crashes)")
    parser.add_argument(
        "--known",
        nargs="?",
        action="append",
        const=str(DEFAULT_KNOWN_FAILURES),
        help="known-failures JSON merged over core's list (alone: core's list; repeatable): fail unless >= 99%% of "
        "forward and 98%% of backward "
        "samples pass and the failing ops are exactly those listed",
    )
    args = parser.parse_args()
    start = time.time()
    # float32 against the CPU's float32: no TF32 in convolutions (PyTorch allows it there by default, and a
    # backend on cuDNN honours that), as PyTorch's own CUDA OpInfo tests compare them. Through the setter
    # behind torch.backends.cudnn.allow_tf32: importing torch.testing._internal forbids assigning it.
    torch._C._set_cudnn_allow_tf32(False)
    results = sweep(args.device or device_type(), trace=args.trace)
    totals = {
        k: sum(r[k] for r in results.values()) for k in ("passed", "failed", "backward_passed", "backward_failed")
    }
    forward_rate = rate(totals["passed"], totals["failed"])
    backward_rate = rate(totals["backward_passed"], totals["backward_failed"])
    device_random = sum(r.get("device_random", 0) for r in results.values())
    print(
        f"forward: {totals['passed']} passed, {totals['failed']} failed ({forward_rate:.2f}%); "
        f"backward: {totals['backward_passed']} passed, {totals['backward_failed']} failed ({backward_rate:.2f}%); "
        f"{device_random} dropout samples drawn from the device generator (reproducible, not CPU's masks) "
        f"in {time.time() - start:.0f}s"
    )
    for key, r in sorted(results.items()):
        if r["failed"] or r["backward_failed"]:
            print(f"  {key}: {r['failed']}/{r['backward_failed']} failed (forward/backward): {r['error']}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=1, sort_keys=True)
    if args.known:
        known = set(load_known_failures(*args.known))
        failing = {key for key, r in results.items() if r["failed"] or r["backward_failed"]}
        problems = []
        if forward_rate < 99.0:
            problems.append(f"forward pass rate {forward_rate:.2f}% is below 99%")
        if backward_rate < 98.0:
            problems.append(f"backward pass rate {backward_rate:.2f}% is below 98%")
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
