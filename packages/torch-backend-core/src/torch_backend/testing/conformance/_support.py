"""What the suite's test files share: the device under test and skips for optional features."""

from __future__ import annotations

import pytest
import torch

from torch_backend.testing import device_count, device_module, device_type, stream_sleep_supported

#: The device type under test ("fake", "npu", ...) and its torch.<device> module.
DEVICE = device_type()
dev = device_module()

needs_two_devices = pytest.mark.skipif(device_count() < 2, reason="needs two devices")
# Asynchrony is only observable with work that takes time: the runtime's optional stream_sleep.
needs_stream_sleep = pytest.mark.skipif(
    not stream_sleep_supported(), reason="the runtime has no stream_sleep (optional)"
)
SLEEP_US = 200_000  # long enough that "still running" is observable, short for CI


def on(index: int | None = None) -> str:
    """The device string of device ``index`` ("fake:1"), or the bare type."""
    return DEVICE if index is None else f"{DEVICE}:{index}"


def train_classifier_like_cpu(
    model: torch.nn.Module,
    reference: torch.nn.Module,
    batches: list,
    *,
    tolerance: float = 1e-4,
    first_loss_only: bool = False,
) -> object:
    """Trains `model` (on the device) and `reference` (on the CPU, same initial state) with SGD and momentum on the
    same (images, labels) batches; asserts equal losses and state (parameters, BatchNorm's running statistics) within
    `tolerance` (`first_loss_only`: the first loss alone) and returns the op report of the device's training."""
    from torch_backend import op_report

    def train(net: torch.nn.Module, device: str) -> list[float]:
        optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
        losses = []
        for images, labels in batches:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(images.to(device)), labels.to(device))
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses

    expected = train(reference, "cpu")
    with op_report() as report:
        got = train(model, DEVICE)
    if first_loss_only:
        got, expected = got[:1], expected[:1]
    # (The message: this module is not a test file, so pytest does not rewrite its asserts.)
    assert got == pytest.approx(expected, abs=tolerance), f"losses on {DEVICE}: {got}; on the CPU: {expected}"
    if not first_loss_only:
        for name, value in model.state_dict().items():
            torch.testing.assert_close(
                value.cpu(), reference.state_dict()[name], rtol=tolerance, atol=tolerance, msg=name
            )
    return report
