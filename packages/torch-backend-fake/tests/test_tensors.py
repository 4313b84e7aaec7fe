"""Tensors on the fake device: creation, printing, copies and device placement."""

import os
import subprocess
import sys

import torch


def test_one_liner_with_no_explicit_import():
    code = "import torch; x = torch.randn(4, device='fake'); print((x * 2 + 1).cpu())"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ | {"TORCH_BACKEND": ""}
    )
    assert out.stdout.startswith("tensor([") and out.stderr == ""


def test_arithmetic_matches_cpu():
    x_cpu = torch.randn(4, 5)
    x = x_cpu.to("fake")
    result = (x * 2 + 1).relu() @ x.t()
    assert result.device == torch.device("fake", 0)
    torch.testing.assert_close(result.cpu(), (x_cpu * 2 + 1).relu() @ x_cpu.t())


def test_printing_shows_values_and_device():
    x = torch.tensor([1.5, -2.0, 3.25], device="fake:1")
    assert repr(x) == "tensor([ 1.5000, -2.0000,  3.2500], device='fake:1')"


def test_device_objects():
    assert torch.device("fake").type == "fake"
    assert torch.device("fake:1").index == 1
    assert torch.empty(2, device="fake").is_fake
    assert torch.randn(2).fake().device == torch.device("fake", 0)


def test_to_other_device_and_back():
    x_cpu = torch.arange(10.0)
    x1 = x_cpu.to("fake:1")
    assert x1.device == torch.device("fake:1")
    x0 = x1.to("fake:0")
    assert x0.device == torch.device("fake:0")
    assert torch.equal(x0.cpu(), x_cpu)


def test_factories_honour_requested_index():
    assert torch.zeros(3, device="fake:1").device.index == 1
    with torch.device("fake:1"):
        assert torch.ones(3).device == torch.device("fake:1")
    with torch.fake.device(1):
        assert torch.empty(3, device="fake").device == torch.device("fake:1")
    assert torch.fake.current_device() == 0


def test_device_and_cpu_storages_are_distinct():
    x_cpu = torch.arange(6.0)
    x = x_cpu.to("fake")
    assert x.untyped_storage().data_ptr() != x_cpu.untyped_storage().data_ptr()
    x_cpu.add_(100)
    assert torch.equal(x.cpu(), torch.arange(6.0))


def test_noncontiguous_and_converting_copies():
    base = torch.arange(24.0).reshape(4, 6)
    dev = base.to("fake")
    torch.testing.assert_close(dev.t().cpu(), base.t())
    torch.testing.assert_close(dev[:, ::2].to(torch.int64).cpu(), base[:, ::2].to(torch.int64))
    # Writing into a strided device view keeps the elements around it.
    dev[:, 1::2] = torch.full((4, 3), -1.0)
    expected = base.clone()
    expected[:, 1::2] = -1.0
    torch.testing.assert_close(dev.cpu(), expected)


def test_item_resize_and_set():
    x = torch.tensor([7.0, 8.0], device="fake")
    assert x[1].item() == 8.0
    x.resize_(5)
    assert x.shape == (5,) and x[:2].cpu().tolist() == [7.0, 8.0]
    y = torch.empty(0, device="fake").set_(x.untyped_storage(), 0, (2,), (1,))
    assert y.cpu().tolist() == [7.0, 8.0]
