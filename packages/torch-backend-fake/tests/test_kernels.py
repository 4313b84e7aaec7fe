"""fake's device kernels behind core's kernel layer (torch_backend/DeviceKernels.h).

Runs in the pass of `nox -s tests-fake` that sets TORCH_BACKEND_FAKE_KERNELS=1
(with discrete memory, the path npu and gpu take); without kernels this module
fails at once rather than passing vacuously.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from torch_backend import _C

KERNELS_ON = os.environ.get("TORCH_BACKEND_FAKE_KERNELS") == "1"
if not KERNELS_ON:
    raise RuntimeError("test_kernels.py needs TORCH_BACKEND_FAKE_KERNELS=1 (nox -s tests-fake sets it for this file)")

BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}
UNARY = ["exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "neg", "reciprocal", "erf", "silu"]
POSITIVE = {"log", "sqrt", "rsqrt", "reciprocal"}  # kept away from NaN/inf on both sides


def unary_input(name: str, shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    x = torch.randn(shape)
    return (x.abs() + 0.5 if name in POSITIVE else x).to(dtype)


def unary_op(name: str):
    return getattr(torch, name) if hasattr(torch, name) else getattr(torch.nn.functional, name)


def same(device_result: torch.Tensor, cpu_result: torch.Tensor) -> None:
    assert device_result.device.type == "fake"
    torch.testing.assert_close(device_result.cpu(), cpu_result, equal_nan=True)


@pytest.mark.parametrize("family", ["binary", "unary"])
def test_every_op_of_the_family_runs_on_device_kernels(family: str):
    rows = {op: on_device for op, fam, _, on_device in _C._op_table() if fam == family}
    assert rows and all(rows.values()), rows
    table = torch._C._dispatch_dump_table("aten::mul.Tensor")
    line = next(line for line in table.splitlines() if line.startswith("PrivateUse1"))
    assert "Activate.cpp" in line, line  # the kernel layer's registration, not the fallback's


def test_ops_report_lists_the_device_kernels():
    out = subprocess.run(
        [sys.executable, "-m", "torch_backend", "ops"], capture_output=True, text=True, timeout=120, check=True
    )
    assert "mul.out" in out.stdout and "device kernel" in out.stdout, out.stdout


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize(
    "shapes",
    [((4, 5), (4, 5)), ((4, 5), (5,)), ((3, 1, 5), (1, 4, 1)), ((), ()), ((0, 3), (3,)), ((2, 3), ())],
    ids=["same", "broadcast", "both-broadcast", "0-dim", "empty", "with-0-dim"],
)
def test_binary_values_match_cpu(name: str, shapes):
    op = BINARY[name]
    a, b = torch.randn(shapes[0]), torch.randn(shapes[1]) + 3
    same(op(a.to("fake"), b.to("fake")), op(a, b))


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_on_non_contiguous_and_offset_views(name: str):
    op = BINARY[name]
    base, other = torch.randn(6, 8), torch.randn(8, 6) + 3
    fbase, fother = base.to("fake"), other.to("fake")
    same(op(fbase[1:5, ::2], fother.t()[2:6, 1::2]), op(base[1:5, ::2], other.t()[2:6, 1::2]))


@pytest.mark.parametrize(
    ("a_dtype", "b_dtype"),
    [
        (torch.int64, torch.float32),
        (torch.int32, torch.int64),
        (torch.float16, torch.float32),
        (torch.bfloat16, torch.bfloat16),
        (torch.bool, torch.bool),
        (torch.uint8, torch.int8),
    ],
)
@pytest.mark.parametrize("name", ["add", "mul", "div"])
def test_binary_with_mixed_dtypes_promotes_like_cpu(name: str, a_dtype, b_dtype):
    op = BINARY[name]
    a = (torch.rand(5, 4) * 10).to(a_dtype)
    b = (torch.rand(4) * 10 + 1).to(b_dtype)
    result = op(a.to("fake"), b.to("fake"))
    assert result.dtype == op(a, b).dtype
    same(result, op(a, b))


def test_cpu_scalar_operands_and_alpha():
    x = torch.randn(3, 4)
    fx = x.to("fake")
    same(fx + 1, x + 1)
    same(2.5 * fx, 2.5 * x)
    same(torch.add(fx, fx, alpha=-0.75), torch.add(x, x, alpha=-0.75))
    same(torch.sub(fx, torch.tensor(2.0), alpha=3), torch.sub(x, torch.tensor(2.0), alpha=3))


def test_in_place_through_a_view_writes_the_base():
    x = torch.randn(4, 6)
    fx = x.to("fake")
    fx[:, 1:4].mul_(torch.arange(3.0).to("fake"))
    x[:, 1:4].mul_(torch.arange(3.0))
    same(fx, x)


def test_out_with_resize_and_with_an_existing_strided_out():
    a, b = torch.randn(3, 4), torch.randn(4)
    out = torch.empty(0, device="fake")
    torch.add(a.to("fake"), b.to("fake"), out=out)
    assert out.shape == (3, 4)
    same(out, a + b)
    strided = torch.zeros(4, 3, device="fake").t()  # kept as is: no resize needed
    torch.mul(a.to("fake"), b.to("fake"), out=strided)
    assert strided.stride() == (1, 3)
    same(strided, a * b)


def test_bad_input_raises_like_cpu():
    ints = torch.ones(3, dtype=torch.long, device="fake")
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        ints.add_(torch.ones(3, device="fake"))
    with pytest.raises(RuntimeError, match="must match the size"):
        torch.ones(3, device="fake") + torch.ones(4, device="fake")
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(3, device="fake:0") * torch.ones(3, device="fake:1")
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.add(torch.ones(3, device="fake"), 1, out=torch.empty(3, dtype=torch.long, device="fake"))
    with pytest.raises(RuntimeError, match="same device"):
        torch.add(torch.ones(3, device="fake"), 1, out=torch.empty(3))


def test_kernels_run_in_stream_order_on_a_side_stream():
    x = torch.ones(1 << 16, device="fake")
    side = torch.fake.Stream()
    side.wait_stream(torch.fake.current_stream())
    with torch.fake.stream(side):
        torch.fake._sleep(100_000)  # the kernels below must wait for it
        y = (x * 3 + 1) / 2
    torch.fake.current_stream().wait_stream(side)
    assert torch.equal(y.cpu(), torch.full((1 << 16,), 2.0))


def test_declined_dtypes_fall_back_and_stay_correct():
    c = torch.randn(4, dtype=torch.complex64)
    same(c.to("fake") * 2, c * 2)  # complex: no kernel dtype, the fallback runs it


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("shape", [(4, 5), (), (0, 3), (2, 3, 4)], ids=["2d", "0-dim", "empty", "3d"])
def test_unary_values_match_cpu(name: str, shape):
    op = unary_op(name)
    x = unary_input(name, shape)
    same(op(x.to("fake")), op(x))


@pytest.mark.parametrize("name", UNARY)
def test_unary_on_non_contiguous_offset_views_in_place_and_out(name: str):
    op = unary_op(name)
    x = unary_input(name, (6, 8))
    fx = x.to("fake")
    same(op(fx.t()[1:7:2, 2:]), op(x.t()[1:7:2, 2:]))
    if hasattr(torch, name):  # silu has no torch.silu(out=): F.silu only
        out = torch.empty(0, device="fake")
        getattr(torch, name)(fx[1:], out=out)
        same(out, getattr(torch, name)(x[1:]))
    method = getattr(torch.Tensor, name + "_", None)
    if method is not None:
        view, expected = fx.clone()[:, ::2], x.clone()[:, ::2]
        method(view)
        method(expected)
        same(view, expected)


@pytest.mark.parametrize("name", ["exp", "sqrt", "sigmoid", "neg"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float16, torch.bfloat16, torch.float64])
def test_unary_dtypes_promote_like_cpu(name: str, dtype):
    op = unary_op(name)
    x = (torch.rand(3, 4) * 4).to(dtype)
    result = op(x.to("fake"))
    assert result.dtype == op(x).dtype
    same(result, op(x))
