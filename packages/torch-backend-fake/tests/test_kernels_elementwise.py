"""fake's element-wise kernels (binary, unary, comparisons, activations, optimizer steps, multi-tensor
lists) behind core's kernel layer: values, dtypes, views and outputs as on the CPU. The other families
and which ops run on the kernels: test_kernels.py.
"""

from __future__ import annotations

import pytest
import torch
from kernel_checks import on_fake, same

from torch_backend import op_report

BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "pow": lambda a, b: torch.pow(a.abs() + 0.5, b),
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
}
UNARY = [
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "neg",
    "reciprocal",
    "erf",
    "silu",
    "relu",
    "gelu",
]
POSITIVE = {"log", "sqrt", "rsqrt", "reciprocal"}  # kept away from NaN/inf on both sides


def unary_input(name: str, shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> torch.Tensor:
    x = torch.randn(shape)
    return (x.abs() + 0.5 if name in POSITIVE else x).to(dtype)


def unary_op(name: str):
    return getattr(torch, name) if hasattr(torch, name) else getattr(torch.nn.functional, name)


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
@pytest.mark.parametrize("name", ["add", "mul", "div", "maximum", "lt", "eq"])
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


def test_cpu_scalars_reach_the_kernel_as_values_not_device_fills():
    # Each op is one call of its kernel: no fill_ of a device tensor first (fake's kernels take a host
    # scalar in any input position; npu's test shows the retry where a kernel declines one).
    fx = torch.randn(16, device="fake")
    with op_report() as report:
        ((fx * 2 + 1) > 0.5).logical_not()
        5 - fx
        torch.where(fx > 0, fx, torch.tensor(0.0))
    counts = {row.op: (row.device_calls, row.fallback_calls) for row in report.rows}
    assert "fill_.Scalar" not in counts, counts
    assert counts["mul.Tensor"] == (1, 0) and counts["add.Tensor"] == (1, 0), counts
    assert counts["sub.Tensor"] == (1, 0), counts  # 5 - x: the scalar is the first input


def test_foreach_lists_run_as_one_multi_tensor_kernel_call():
    tensors = [torch.randn(16, device="fake") for _ in range(5)]
    others = [torch.randn(16, device="fake") for _ in range(5)]
    with op_report() as report:
        torch._foreach_add_(tensors, others)
        torch._foreach_addcdiv_(tensors, others, others, [0.1] * 5)
    counts = {row.op: row.device_calls for row in report.rows}
    assert counts == {"_foreach_add_.List": 1, "_foreach_addcdiv_.ScalarList": 1}, counts
    # A list ATen's fast route refuses (two dtypes) goes tensor by tensor, still on device kernels.
    mixed = [torch.randn(4, device="fake"), torch.randn(4, device="fake", dtype=torch.float64)]
    with op_report() as report:
        torch._foreach_mul_(mixed, 2.0)
    counts = {row.op: (row.device_calls, row.fallback_calls) for row in report.rows}
    per_tensor = {op: calls for op, calls in counts.items() if not op.startswith("_foreach")}
    assert counts["_foreach_mul_.Scalar"] == (1, 0) and list(per_tensor.values()) == [(2, 0)], counts


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
    if hasattr(torch, name) and name != "relu":  # no torch.silu(out=) nor relu(out=)
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


def test_comparisons_give_bool_and_in_place_keeps_the_dtype():
    a, b = torch.randint(0, 3, (4, 5)).float(), torch.randint(0, 3, (5,)).float()
    fa, fb = on_fake(a, b)
    for op in (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge):
        result = op(fa, fb)
        assert result.dtype == torch.bool
        same(result, op(a, b))
        same(op(fa, 1), op(a, 1))  # the .Scalar overload
    fa.ge_(fb)
    assert fa.dtype == torch.float32
    same(fa, a.ge_(b))


def test_where_clamp_and_scalar_pow():
    x, y = torch.randn(4, 5), torch.randn(5)
    fx, fy = on_fake(x, y)
    same(torch.where(fx > 0, fx, fy), torch.where(x > 0, x, y))
    same(torch.where(fx > 0, fx, 0.0), torch.where(x > 0, x, 0.0))
    same(torch.where(fx > 0, fx.double(), fy), torch.where(x > 0, x.double(), y))  # promotes
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor"):
        torch.where(fx, fx, fy)
    x[0, 0] = float("nan")
    fx = x.to("fake")
    for kwargs in ({"min": -0.5, "max": 0.5}, {"min": 0.1}, {"max": -0.2}):
        same(torch.clamp(fx, **kwargs), torch.clamp(x, **kwargs))
    same(fx.clamp_min(0.25), x.clamp_min(0.25))
    ints = torch.arange(-5, 5)
    same(ints.to("fake").clamp(-2, 3), ints.clamp(-2, 3))
    for exponent in (2, 3, 0.5, -1, 1.7):
        same(fx.abs() ** exponent, x.abs() ** exponent)
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.empty(3, dtype=torch.int8, device="fake").fill_(300)


@pytest.mark.parametrize("name", ["relu", "gelu", "gelu-tanh", "silu", "sigmoid", "tanh"])
def test_activation_backward_matches_cpu(name: str):
    fn = {
        "relu": torch.relu,
        "gelu": torch.nn.functional.gelu,
        "gelu-tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
        "silu": torch.nn.functional.silu,
        "sigmoid": torch.sigmoid,
        "tanh": torch.tanh,
    }[name]
    x = torch.randn(6, 7)
    grad = torch.randn(6, 7)
    cpu = x.clone().requires_grad_()
    fn(cpu).backward(grad)
    dev = x.to("fake").requires_grad_()
    fn(dev).backward(grad.to("fake"))
    same(dev.grad, cpu.grad)


def test_optimizer_element_wise_ops():
    s, a, b = torch.randn(4, 6), torch.randn(4, 6), torch.rand(6) + 0.5
    fs, fa, fb = on_fake(s, a, b)
    same(torch.addcmul(fs, fa, fb, value=-0.3), torch.addcmul(s, a, b, value=-0.3))
    same(torch.addcdiv(fs, fa, fb, value=0.7), torch.addcdiv(s, a, b, value=0.7))
    same(torch.lerp(fs, fa, 0.9), torch.lerp(s, a, 0.9))
    same(torch.lerp(fs, fa, fb - 0.5), torch.lerp(s, a, b - 0.5))
    view, expected = fs.clone()[:, 1::2], s.clone()[:, 1::2]
    view.addcmul_(fa[:, :3], fb[:3])
    expected.addcmul_(a[:, :3], b[:3])
    same(view, expected)
    filled = fs.clone()
    filled[1:3].fill_(2.5)
    filled[:, 0].zero_()
    reference = s.clone()
    reference[1:3].fill_(2.5)
    reference[:, 0].zero_()
    same(filled, reference)
