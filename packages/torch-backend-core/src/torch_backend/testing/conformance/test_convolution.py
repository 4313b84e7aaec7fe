"""Convolution and 2-d pooling against the CPU, forward and backward: on the backend's kernels
(DeviceKernels.h's convolution and pooling families) where it has them, else on the fallback; and a
ResNet-style training step with no op on the copying fallback where the backend has the kernels it
needs."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import nn
from torch.nn import functional

from torch_backend import _C
from torch_backend.bench.models import resnet18
from torch_backend.testing.conformance._support import DEVICE, train_classifier_like_cpu

pytestmark = pytest.mark.usefixtures("strict_float32_convolutions")
ON_DEVICE = {op for op, _family, _kernel, on_device, _forced in _C._op_table() if on_device}
TOLERANCE = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}


def _compare(device_call, cpu_call, inputs: list[torch.Tensor], dtype: torch.dtype, channels_last: bool) -> None:
    """Forward and every input's gradient on the device against the CPU (in float32 for half dtypes)."""
    cpu = [t.detach().float().requires_grad_() for t in inputs]
    on_device = []
    for t in inputs:
        moved = t.detach().to(DEVICE, dtype)
        if channels_last and moved.dim() == 4:
            moved = moved.contiguous(memory_format=torch.channels_last)
        on_device.append(moved.requires_grad_())
    expected = cpu_call(*cpu)
    got = device_call(*on_device)
    grad = torch.randn_like(expected)
    expected.backward(grad)
    got.backward(grad.to(DEVICE, dtype))
    tol = TOLERANCE[dtype]
    scale = max(1.0, expected.abs().max().item())
    torch.testing.assert_close(got.detach().cpu().float(), expected.detach(), rtol=tol, atol=tol * scale)
    if channels_last and got.dim() == 4 and "convolution" in ON_DEVICE:
        assert got.is_contiguous(memory_format=torch.channels_last), (
            "a channels-last input gives a channels-last output"
        )
    for name, (device_input, cpu_input) in enumerate(zip(on_device, cpu, strict=True)):
        grad_scale = max(1.0, cpu_input.grad.abs().max().item())
        torch.testing.assert_close(
            device_input.grad.cpu().float(),
            cpu_input.grad,
            rtol=tol,
            atol=tol * grad_scale,
            msg=f"grad of input {name}",
        )


# (spatial dims, groups, stride, padding, dilation, transposed): every combination once in float32.
CONV_GRID = list(itertools.product([1, 2, 3], [1, 2], [1, 2], [0, 1], [1, 2], [False, True]))


@pytest.mark.parametrize(("dims", "groups", "stride", "padding", "dilation", "transposed"), CONV_GRID)
def test_convolution_matches_cpu(dims: int, groups: int, stride: int, padding: int, dilation: int, transposed: bool):
    torch.manual_seed(dims * 100 + groups * 10 + stride)
    channels_in, channels_out, size = 4, 6, 6 if dims < 3 else 5
    x = torch.randn(2, channels_in, *[size] * dims)
    shape = (channels_in, channels_out // groups) if transposed else (channels_out, channels_in // groups)
    weight = torch.randn(*shape, *[3] * dims)
    bias = torch.randn(channels_out)
    output_padding = stride - 1 if transposed else 0

    def conv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return torch.convolution(
            x, weight, bias, [stride] * dims, [padding] * dims, [dilation] * dims, transposed,
            [output_padding] * dims, groups,
        )  # fmt: skip

    _compare(conv, conv, [x, weight, bias], torch.float32, channels_last=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_conv2d_dtypes_and_layouts_match_cpu(dtype: torch.dtype, channels_last: bool):
    torch.manual_seed(3)
    x, weight, bias = torch.randn(2, 8, 9, 9), torch.randn(16, 8, 3, 3) * 0.2, torch.randn(16)

    def conv(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return functional.conv2d(x, weight, bias, stride=2, padding=1)

    _compare(conv, conv, [x, weight, bias], dtype, channels_last)


def test_conv2d_without_bias_and_with_padding_modes_match_cpu():
    torch.manual_seed(4)
    x, weight = torch.randn(1, 3, 10, 7), torch.randn(5, 3, 3, 2)
    for padding in ("same", "valid", (2, 1)):

        def conv(x: torch.Tensor, weight: torch.Tensor, padding: object = padding) -> torch.Tensor:
            return functional.conv2d(x, weight, padding=padding, dilation=(1, 2) if padding == "same" else 1)

        _compare(conv, conv, [x, weight], torch.float32, channels_last=False)


def test_a_convolution_the_cpu_refuses_raises_the_cpus_error():
    x = torch.randn(1, 3, 8, 8, device=DEVICE)
    weight = torch.randn(4, 5, 3, 3, device=DEVICE)  # 5 input channels expected, 3 given
    with pytest.raises(RuntimeError, match=r"expected input.*to have 5 channels, but got 3 channels"):
        functional.conv2d(x, weight)
    small = torch.randn(1, 3, 2, 2, device=DEVICE)
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        functional.conv2d(small, torch.randn(4, 3, 3, 3, device=DEVICE))
    assert torch.equal((x * 0).cpu(), torch.zeros(1, 3, 8, 8)), "the device works afterwards"


POOLS = {
    "max 3/2/1": lambda t: functional.max_pool2d(t, 3, 2, 1),
    "max ceil": lambda t: functional.max_pool2d(t, 2, ceil_mode=True),
    "max dilated": lambda t: functional.max_pool2d(t, 3, 1, 1, dilation=2),
    "avg 3/2/1": lambda t: functional.avg_pool2d(t, 3, 2, 1),
    "avg no pad count": lambda t: functional.avg_pool2d(t, 3, 2, 1, count_include_pad=False),
    "avg divisor": lambda t: functional.avg_pool2d(t, 2, divisor_override=3),
    "avg ceil": lambda t: functional.avg_pool2d(t, 3, 2, ceil_mode=True),
    "adaptive avg 4x3": lambda t: functional.adaptive_avg_pool2d(t, (4, 3)),
    "adaptive avg 5x5": lambda t: functional.adaptive_avg_pool2d(t, 5),
}


@pytest.mark.parametrize("name", list(POOLS))
@pytest.mark.parametrize("channels_last", [False, True])
def test_pooling_matches_cpu(name: str, channels_last: bool):
    torch.manual_seed(5)
    pool = POOLS[name]
    _compare(pool, pool, [torch.randn(2, 3, 9, 11)], torch.float32, channels_last)


def test_max_pool_indices_and_ties_match_cpu():
    x = torch.tensor([[[[1.0, 1.0, 2.0, 2.0], [1.0, float("nan"), 0.0, 2.0], [3.0, 3.0, 3.0, 3.0]]]])
    values, indices = functional.max_pool2d(x, 2, 1, return_indices=True)
    got_values, got_indices = functional.max_pool2d(x.to(DEVICE), 2, 1, return_indices=True)
    torch.testing.assert_close(got_values.cpu(), values, equal_nan=True)
    assert torch.equal(got_indices.cpu(), indices)


def _small_resnet() -> nn.Module:
    """ResNet-18's layout (the benchmarks' model, torchvision's shapes) at a sixteenth of its width."""
    return resnet18(classes=10, width=4)


RESNET_OPS = {"convolution", "max_pool2d_with_indices", "native_batch_norm", "relu", "addmm", "mean.dim"}


def test_resnet_training_steps_match_cpu_with_nothing_on_the_copying_fallback():
    torch.manual_seed(0)
    reference = _small_resnet()
    model = _small_resnet()
    model.load_state_dict(reference.state_dict())
    model.to(DEVICE)
    # 8 images: the last stage's BatchNorm normalises batch x 1 x 1 values, and over 4 a float32 rounding
    # difference grows 50-fold per step (float64 agrees to 1e-11 there).
    batches = [(torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))) for _ in range(3)]

    report = train_classifier_like_cpu(model, reference, batches)
    missing = RESNET_OPS - ON_DEVICE
    if missing:
        pytest.skip(f"the backend has no kernels for {sorted(missing)}: those run on the fallback")
    copying = {row.op: row.copying_calls for row in report.rows if row.copying_calls}
    assert not copying, f"ops on the copying fallback: {copying}"
    for op in ("convolution", "convolution_backward", "max_pool2d_with_indices"):
        assert report[op].device_calls > 0, report.table()
