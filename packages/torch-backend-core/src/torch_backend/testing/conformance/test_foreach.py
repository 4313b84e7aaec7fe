"""The ``_foreach_*`` ops, the optimizers' multi-tensor path.

Where the backend has multi-tensor kernels (DeviceKernels.h), core runs each list in one kernel call
when ATen's fast route takes it, else tensor by tensor; without them, ATen's composite path runs the
op per tensor. Every way, the results are CPU's (integers exactly, floats within their dtype's
tolerance), in place and functional, with CPU's strides and errors, and optimizers with
``foreach=True`` step as on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from torch_backend.testing.conformance._support import DEVICE

Lists = list[list[torch.Tensor]]

# name -> (op over lists (first list updated in place where the op is), number of lists, positive inputs)
OPS: dict[str, tuple[Callable[[Lists], object], int]] = {
    "_foreach_add_.List": (lambda ls: torch._foreach_add_(ls[0], ls[1], alpha=-0.5), 2),
    "_foreach_add.List": (lambda ls: torch._foreach_add(ls[0], ls[1]), 2),
    "_foreach_add_.Scalar": (lambda ls: torch._foreach_add_(ls[0], 1.25), 1),
    "_foreach_add.Scalar": (lambda ls: torch._foreach_add(ls[0], 3), 1),
    "_foreach_add_.ScalarList": (lambda ls: torch._foreach_add_(ls[0], [0.5 * i for i in range(len(ls[0]))]), 1),
    "_foreach_sub_.List": (lambda ls: torch._foreach_sub_(ls[0], ls[1], alpha=2), 2),
    "_foreach_sub.Scalar": (lambda ls: torch._foreach_sub(ls[0], 0.75), 1),
    "_foreach_mul_.List": (lambda ls: torch._foreach_mul_(ls[0], ls[1]), 2),
    "_foreach_mul_.Scalar": (lambda ls: torch._foreach_mul_(ls[0], 0.9), 1),
    "_foreach_mul.ScalarList": (lambda ls: torch._foreach_mul(ls[0], [1.0 + i for i in range(len(ls[0]))]), 1),
    "_foreach_div_.List": (lambda ls: torch._foreach_div_(ls[0], ls[1]), 2),
    "_foreach_div_.ScalarList": (lambda ls: torch._foreach_div_(ls[0], [2.0 + i for i in range(len(ls[0]))]), 1),
    "_foreach_div.Scalar": (lambda ls: torch._foreach_div(ls[0], 3.0), 1),
    "_foreach_addcmul_.Scalar": (lambda ls: torch._foreach_addcmul_(ls[0], ls[1], ls[2], value=0.1), 3),
    "_foreach_addcmul.ScalarList": (
        lambda ls: torch._foreach_addcmul(ls[0], ls[1], ls[2], [0.5] * len(ls[0])),
        3,
    ),
    "_foreach_addcdiv_.Scalar": (lambda ls: torch._foreach_addcdiv_(ls[0], ls[1], ls[2], value=-0.01), 3),
    "_foreach_addcdiv_.ScalarList": (
        lambda ls: torch._foreach_addcdiv_(ls[0], ls[1], ls[2], [0.1 * (i + 1) for i in range(len(ls[0]))]),
        3,
    ),
    "_foreach_lerp_.Scalar": (lambda ls: torch._foreach_lerp_(ls[0], ls[1], 0.1), 2),
    "_foreach_lerp.Scalar": (lambda ls: torch._foreach_lerp(ls[0], ls[1], 0.7), 2),
    "_foreach_sqrt_": (lambda ls: torch._foreach_sqrt_(ls[0]), 1),
    "_foreach_sqrt": (lambda ls: torch._foreach_sqrt(ls[0]), 1),
}

SHAPES = [(16,), (3, 5), (1,), (0,), (2, 3, 4)]


def make_lists(count: int, dtype: torch.dtype, positive: bool, layout: str) -> Lists:
    torch.manual_seed(0)
    lists = []
    for _ in range(count):
        tensors = []
        for shape in SHAPES:
            t = torch.rand(shape) + 0.5 if positive else torch.randn(shape)
            if layout == "transposed" and t.dim() >= 2:
                t = t.mT.contiguous().mT  # dense, not contiguous: same strides in every list
            tensors.append(t.to(dtype))
        lists.append(tensors)
    if layout == "mixed dtypes":  # the fast route refuses: per tensor
        lists[0][1] = lists[0][1].double()
        if count > 1:
            lists[1][1] = lists[1][1].double()
    return lists


def run_both(name: str, dtype: torch.dtype, layout: str) -> None:
    op, count = OPS[name]
    positive = "sqrt" in name or "div" in name
    host = make_lists(count, dtype, positive, layout)
    device = [[t.to(DEVICE) for t in tensors] for tensors in host]
    expected = op(host)
    result = op(device)
    if expected is None:  # in place: the first list changed
        assert result is None
        expected, result = host[0], device[0]
    assert len(result) == len(expected)
    for got, want in zip(result, expected, strict=True):
        assert got.device.type == DEVICE and got.dtype == want.dtype and got.stride() == want.stride()
        # Floating results within assert_close's tolerances for their dtype, as the OpInfo sweep takes
        # kernels: a kernel may fuse a multiply-add the CPU rounds twice, and a Python scalar reaches
        # it in the tensor's dtype where CPU's mul and div keep float16's in float.
        exact = not want.is_floating_point()
        torch.testing.assert_close(
            got.cpu(), want, rtol=0 if exact else None, atol=0 if exact else None, equal_nan=True
        )


@pytest.mark.parametrize("name", OPS)
def test_each_overload_equals_cpu(name: str) -> None:
    run_both(name, torch.float32, "contiguous")


@pytest.mark.parametrize("layout", ["transposed", "mixed dtypes"])
@pytest.mark.parametrize("name", ["_foreach_add_.List", "_foreach_addcdiv_.ScalarList", "_foreach_sqrt"])
def test_lists_of_other_layouts_equal_cpu(name: str, layout: str) -> None:
    run_both(name, torch.float32, layout)


OPS_EVERY_DTYPE = {
    "_foreach_add_.List (alpha 1)": (lambda ls: torch._foreach_add_(ls[0], ls[1]), 2),
    "_foreach_mul_.Scalar (3)": (lambda ls: torch._foreach_mul_(ls[0], 3), 1),
    "_foreach_addcmul_.Scalar (2)": (lambda ls: torch._foreach_addcmul_(ls[0], ls[1], ls[2], value=2), 3),
}
OPS.update(OPS_EVERY_DTYPE)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64, torch.int32], ids=str)
@pytest.mark.parametrize("name", OPS_EVERY_DTYPE)
def test_other_dtypes_equal_cpu(name: str, dtype: torch.dtype) -> None:
    run_both(name, dtype, "contiguous")


def test_bad_lists_raise_cpu_errors() -> None:
    a = [torch.randn(3, device=DEVICE)]
    with pytest.raises(RuntimeError, match="Tensor list must have at least one tensor"):
        torch._foreach_add_([], [])
    with pytest.raises(RuntimeError, match="Tensor lists must have the same number of tensors"):
        torch._foreach_add_(a, a + a)
    with pytest.raises(RuntimeError):
        torch._foreach_add_(a, [torch.randn(4, device=DEVICE)])  # shapes differ, as on the CPU


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda params: torch.optim.Adam(params, lr=1e-2, foreach=True),
        lambda params: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1, foreach=True),
        lambda params: torch.optim.SGD(params, lr=1e-2, momentum=0.9, nesterov=True, foreach=True),
    ],
    ids=["Adam", "AdamW", "SGD-nesterov"],
)
def test_optimizers_with_foreach_step_like_cpu(make_optimizer: Callable) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    on_device = [p.detach().to(DEVICE).requires_grad_() for p in model.parameters()]
    on_host = [p.detach().clone().requires_grad_() for p in model.parameters()]
    optimizers = [make_optimizer(on_host), make_optimizer(on_device)]
    for step in range(3):
        for params in (on_host, on_device):
            for i, p in enumerate(params):
                torch.manual_seed(step * 10 + i)
                p.grad = torch.randn(p.shape).to(p.device)
        for optimizer in optimizers:
            optimizer.step()
    for got, want in zip(on_device, on_host, strict=True):
        torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=1e-6, atol=1e-7)
