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
        expected = op(x)
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
