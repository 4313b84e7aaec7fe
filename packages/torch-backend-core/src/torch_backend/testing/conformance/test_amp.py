"""torch.autocast and GradScaler on the device behave like CUDA's."""

import pytest
import torch

from torch_backend.testing.conformance._support import DEVICE


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_autocast_casts_like_cuda(dtype):
    a, b = torch.randn(4, 4, device=DEVICE), torch.randn(4, 4, device=DEVICE)
    with torch.autocast(device_type=DEVICE, dtype=dtype):
        assert (a @ b).dtype == dtype  # lower-precision list
        assert torch.nn.functional.linear(a, b).dtype == dtype
        assert torch.softmax(a @ b, dim=0).dtype == torch.float32  # fp32 list
        assert (a + b).dtype == torch.float32  # not listed: unchanged
        assert torch.addcmul(a.to(dtype), a, b).dtype == torch.float32  # promote list
    assert (a @ b).dtype == torch.float32


def test_autocast_matches_cpu_autocast_values():
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = a @ b
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        actual = a.to(DEVICE) @ b.to(DEVICE)
    assert torch.equal(actual.cpu(), expected)


def test_grad_scaler_scales_steps_and_skips_inf():
    model = torch.nn.Linear(4, 1).to(DEVICE)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler(DEVICE, init_scale=1024.0)
    x = torch.randn(8, 4, device=DEVICE)
    with torch.autocast(DEVICE, dtype=torch.float16):
        loss = model(x).float().pow(2).mean()
    before = model.weight.detach().cpu().clone()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert not torch.equal(model.weight.detach().cpu(), before)
    assert scaler.get_scale() == 1024.0
    # An inf gradient: the step is skipped and the scale backs off.
    opt.zero_grad()
    (model(x).sum() * float("inf")).backward()
    kept = model.weight.detach().cpu().clone()
    scaler.step(opt)
    scaler.update()
    assert torch.equal(model.weight.detach().cpu(), kept)
    assert scaler.get_scale() == 512.0


def test_banned_ops_raise_cudas_error():
    probabilities = torch.rand(4, device=DEVICE)
    target = torch.rand(4, device=DEVICE)
    with torch.autocast(device_type=DEVICE):
        with pytest.raises(RuntimeError, match=r"binary_cross_entropy and torch\.nn\.BCELoss are unsafe to autocast"):
            torch.nn.functional.binary_cross_entropy(probabilities, target)
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            torch.nn.BCELoss()(probabilities, target)
        # The safe form, as the message says, runs (in float32).
        loss = torch.nn.functional.binary_cross_entropy_with_logits(probabilities, target)
        assert loss.dtype == torch.float32
    # Outside autocast the op is allowed and matches the CPU.
    expected = torch.nn.functional.binary_cross_entropy(probabilities.cpu(), target.cpu())
    torch.testing.assert_close(torch.nn.functional.binary_cross_entropy(probabilities, target).cpu(), expected)
