"""Tensors on the device: creation, printing, copies and device placement."""

import re

import torch

from torch_backend.testing import run_python
from torch_backend.testing.conformance._support import DEVICE, dev, needs_two_devices, on

# The one warning a backend chosen by TORCH_BACKEND gives where PyTorch's own accelerator is usable too
# (gpu beside cuda on an NVIDIA machine): its line and the source line Python prints under it.
COEXISTENCE_WARNING = re.compile(
    r"^.*torch-backend: '\w+' is active while PyTorch's own accelerator .*\n(  \S.*\n)?", re.M
)


def test_one_liner_with_no_explicit_import():
    # `import torch` alone activates the backend, with nothing else on stderr (no warning).
    out = run_python(f"import torch; x = torch.randn(4, device={DEVICE!r}); print((x * 2 + 1).cpu())")
    assert out.stdout.startswith("tensor([")
    assert COEXISTENCE_WARNING.sub("", out.stderr) == "", out.stderr


def test_arithmetic_matches_cpu():
    x_cpu = torch.randn(4, 5)
    x = x_cpu.to(DEVICE)
    result = (x * 2 + 1).relu() @ x.t()
    assert result.device == torch.device(DEVICE, 0)
    torch.testing.assert_close(result.cpu(), (x_cpu * 2 + 1).relu() @ x_cpu.t())


def test_printing_shows_values_and_device():
    last = dev.device_count() - 1
    x = torch.tensor([1.5, -2.0, 3.25], device=on(last))
    assert repr(x) == f"tensor([ 1.5000, -2.0000,  3.2500], device='{DEVICE}:{last}')"


def test_device_objects():
    assert torch.device(DEVICE).type == DEVICE
    assert torch.device(on(1)).index == 1
    assert getattr(torch.empty(2, device=DEVICE), f"is_{DEVICE}")
    assert getattr(torch.randn(2), DEVICE)().device == torch.device(DEVICE, 0)


def test_arange_on_the_device_matches_cpu_including_empty_ranges():
    # Empty ranges (arange(1.1, 1.1, -1.0), arange(3, 3)) reach the device's arange as an empty output.
    for args in ((0, 5), (1.1, 5.1, 2.0), (2.1, -2.9, -1.0), (5, 0, -2), (1.1, 1.1, -1.0), (3, 3), (0.5, 0.5)):
        expected = torch.arange(*args)
        result = torch.arange(*args, device=DEVICE)
        assert result.device.type == DEVICE
        assert torch.equal(result.cpu(), expected), args
        out = torch.empty(expected.shape, dtype=expected.dtype, device=DEVICE)
        torch.arange(*args, out=out)
        assert torch.equal(out.cpu(), expected), args
    dev.synchronize()  # an empty range's copy waits for nothing: a failed launch shows here


@needs_two_devices
def test_to_other_device_and_back():
    x_cpu = torch.arange(10.0)
    x1 = x_cpu.to(on(1))
    assert x1.device == torch.device(on(1))
    x0 = x1.to(on(0))
    assert x0.device == torch.device(on(0))
    assert torch.equal(x0.cpu(), x_cpu)


@needs_two_devices
def test_factories_honour_requested_index():
    assert torch.zeros(3, device=on(1)).device.index == 1
    with torch.device(on(1)):
        assert torch.ones(3).device == torch.device(on(1))
    with dev.device(1):
        assert torch.empty(3, device=DEVICE).device == torch.device(on(1))
    assert dev.current_device() == 0


def test_device_and_cpu_storages_are_distinct():
    x_cpu = torch.arange(6.0)
    x = x_cpu.to(DEVICE)
    assert x.untyped_storage().data_ptr() != x_cpu.untyped_storage().data_ptr()
    x_cpu.add_(100)
    assert torch.equal(x.cpu(), torch.arange(6.0))


def test_noncontiguous_and_converting_copies():
    base = torch.arange(24.0).reshape(4, 6)
    dev = base.to(DEVICE)
    torch.testing.assert_close(dev.t().cpu(), base.t())
    torch.testing.assert_close(dev[:, ::2].to(torch.int64).cpu(), base[:, ::2].to(torch.int64))
    # Writing into a strided device view keeps the elements around it.
    dev[:, 1::2] = torch.full((4, 3), -1.0)
    expected = base.clone()
    expected[:, 1::2] = -1.0
    torch.testing.assert_close(dev.cpu(), expected)


def test_item_resize_and_set():
    x = torch.tensor([7.0, 8.0], device=DEVICE)
    assert x[1].item() == 8.0
    x.resize_(5)
    assert x.shape == (5,) and x[:2].cpu().tolist() == [7.0, 8.0]
    y = torch.empty(0, device=DEVICE).set_(x.untyped_storage(), 0, (2,), (1,))
    assert y.cpu().tolist() == [7.0, 8.0]
