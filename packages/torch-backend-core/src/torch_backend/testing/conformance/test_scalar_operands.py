"""Python numbers and 0-dim CPU tensors as element-wise operands (``x * 2``, ``x > 0``, ``1 - x``).

Core hands them to the backend's kernels by value (``ElementwiseCall::scalar_inputs`` in
DeviceKernels.h), or, where a kernel declines a host scalar, as device tensors it fills first; either
way the result is CPU's, bit for bit, in every dtype, and a refused combination raises CPU's error.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from torch_backend.testing.conformance._support import DEVICE

DTYPES = [
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.float64,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
]

CASES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "x * 3": lambda t: t * 3,
    "x * 0.5": lambda t: t * 0.5,
    "x + 2": lambda t: t + 2,
    "x + 0.1": lambda t: t + 0.1,
    "x - 2 * 3 (alpha)": lambda t: torch.sub(t, 2, alpha=3),
    "5 - x (scalar first)": lambda t: 5 - t,
    "x / 4": lambda t: t / 4,
    "x > 1": lambda t: t > 1,
    "x == 2": lambda t: t == 2,
    "x * 0-dim CPU tensor": lambda t: t * torch.tensor(3, dtype=t.dtype),
    "maximum with a 0-dim CPU tensor": lambda t: torch.maximum(t, torch.tensor(1, dtype=t.dtype)),
    "where(c, x, 0-dim CPU tensor)": lambda t: torch.where(t > 0, t, torch.tensor(0, dtype=t.dtype)),
    "x + 300 (wraps in uint8)": lambda t: t + 300,
    "x.mul_(2)": lambda t: t.clone().mul_(2),
}


REDUCED = (torch.float16, torch.bfloat16)
ROUNDED_FIRST_ON_CPU = {"x + 0.1"}


def on_device_kernels(*ops: str) -> bool:
    """Whether every one of these ATen overloads runs on the backend's kernels (else on the CPU
    fallback, which gives the CPU's answers)."""
    from torch_backend import _C

    on_device = {op for op, _family, _kernel, device, _forced in _C._op_table() if device}
    return set(ops) <= on_device


def operand(dtype: torch.dtype) -> torch.Tensor:
    torch.manual_seed(0)
    values = torch.randint(-3, 4, (5, 6)).to(dtype) if not dtype.is_floating_point else torch.randn(5, 6)
    return values.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES)
def test_results_equal_cpu_or_raise_its_error(case: str, dtype: torch.dtype) -> None:
    op = CASES[case]
    x = operand(dtype)
    try:
        # Except where the CPU rounds a number float16 cannot hold before adding: CUDA's answer then,
        # computed in float and rounded once (the test below).
        rounds_once = case in ROUNDED_FIRST_ON_CPU and dtype in REDUCED and on_device_kernels("add.Tensor")
        expected = op(x.float()).to(dtype) if rounds_once else op(x)
    except RuntimeError as error:
        with pytest.raises(RuntimeError) as raised:
            op(x.to(DEVICE))
        assert type(raised.value) is type(error)
        return
    result = op(x.to(DEVICE))
    assert result.device.type == DEVICE and result.dtype == expected.dtype
    torch.testing.assert_close(result.cpu(), expected, rtol=0, atol=0, equal_nan=True)


def test_a_scalar_into_an_out_of_another_dtype_and_a_broadcast_view() -> None:
    # The output's dtype differs from the compute dtype: core computes into a temporary, the scalar
    # still an operand.
    x = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    out = torch.empty(2, 3, dtype=torch.float64, device=DEVICE)
    torch.add(x.to(DEVICE), 2, out=out)
    torch.testing.assert_close(out.cpu(), torch.add(x, 2).double(), rtol=0, atol=0)
    # A broadcast and transposed operand beside the scalar.
    row = torch.randn(1, 3)
    result = torch.mul(row.to(DEVICE).expand(4, 3).t(), 1.5)
    torch.testing.assert_close(result.cpu(), row.expand(4, 3).t() * 1.5, rtol=0, atol=0)


def test_scalar_operands_carry_gradients_like_cpu() -> None:
    x = torch.randn(4, 3, requires_grad=True)
    y = x.detach().to(DEVICE).requires_grad_()
    ((x * 2 + 1) / 3 - 0.5).relu().sum().backward()
    ((y * 2 + 1) / 3 - 0.5).relu().sum().backward()
    torch.testing.assert_close(y.grad.cpu(), x.grad, rtol=0, atol=0)


#: Each case with the ATen overload whose kernel computes it. Where that runs on the CPU fallback the
#: device gives the CPU's answer, which rounds the number to the dtype first for add and sub (not for mul
#: and div). A `_foreach_` op without a kernel of its own runs ATen's per-tensor loop (`add_` on the device).
ARITHMETIC: dict[str, tuple[Callable[[torch.Tensor, float], torch.Tensor], str]] = {
    "x + s": (lambda t, s: t + s, "add.Tensor"),
    "x - s": (lambda t, s: t - s, "sub.Tensor"),
    "s - x": (lambda t, s: s - t, "sub.Tensor"),
    "x * s": (lambda t, s: t * s, "mul.Tensor"),
    "x / s": (lambda t, s: t / s, "div.Tensor"),
    "x.add_(s)": (lambda t, s: t.clone().add_(s), "add_.Tensor"),
    "_foreach_mul([x], s)": (lambda t, s: torch._foreach_mul([t], s)[0], "mul.Tensor"),
    "_foreach_add_([x], s)": (lambda t, s: torch._foreach_add_([t.clone()], s)[0], "add_.Tensor"),
}
FOREACH_KERNELS = {"_foreach_mul([x], s)": "_foreach_mul.Scalar", "_foreach_add_([x], s)": "_foreach_add_.Scalar"}
COMPARISONS: dict[str, Callable[[torch.Tensor, float], torch.Tensor]] = {
    "x > s": lambda t, s: t > s,
    "x >= s": lambda t, s: t >= s,
    "x == s": lambda t, s: t == s,
    "x < s": lambda t, s: t < s,
}
# Numbers float16 and bfloat16 cannot hold: rounding them first changes results.
SCALARS = [0.1, 1 / 3, 1e-3, 7.7, -2.9]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_reduced_precision_arithmetic_computes_in_float_and_rounds_once(dtype: torch.dtype) -> None:
    """`half_x * 0.1` is computed in float and rounded once, as CUDA's kernels do (opmath, reading the
    number as given): it is not rounded to the tensor's dtype first. Comparisons compare in the dtype,
    as CUDA's and the CPU's do. Where an op runs on the CPU fallback the device gives the CPU's answer."""
    torch.manual_seed(0)
    x = torch.cat([torch.randn(2048) * 4, torch.tensor(SCALARS)]).to(dtype)
    for s in SCALARS:
        for name, (op, computed_by) in ARITHMETIC.items():
            on_device = on_device_kernels(computed_by) or on_device_kernels(FOREACH_KERNELS.get(name, computed_by))
            once = op(x.float(), s).to(dtype) if on_device else op(x, s)
            result = op(x.to(DEVICE), s)
            assert result.dtype == dtype and torch.equal(result.cpu(), once), f"{name} with s={s}"
        for name, op in COMPARISONS.items():
            assert torch.equal(op(x.to(DEVICE), s).cpu(), op(x, s)), f"{name} with s={s}"
