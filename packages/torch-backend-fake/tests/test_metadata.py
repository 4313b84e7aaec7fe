"""A backend's per-tensor metadata (a private format number and the like) survives what users do.

PyTorch drops what ``torch._utils.set_tensor_metadata`` is given on a device whose
backend registers no metadata hooks; core registers them (TensorMetadata.cpp), and
carries the metadata to views, to copies between tensors of the backend, through
detach and torch.save / torch.load.
"""

from __future__ import annotations

import copy
import io

import pytest
import torch

import torch_backend


def formatted(value: int = 29) -> torch.Tensor:
    tensor = torch.arange(12.0, device="fake").reshape(3, 4)
    torch_backend.set_tensor_metadata(tensor, "format", value)
    torch_backend.set_tensor_metadata(tensor, "nz", 1)
    return tensor


def test_pytorchs_own_api_keeps_what_it_is_given():
    tensor = torch.ones(2, device="fake")
    torch._utils.set_tensor_metadata(tensor, {"is_nz": True, "legacy": False})
    assert torch._utils.get_tensor_metadata(tensor) == {"is_nz": True, "legacy": False}
    assert torch_backend.tensor_metadata(tensor) == {"is_nz": 1, "legacy": 0}


def test_pytorchs_own_api_carries_flags_and_torch_backends_carries_integers():
    # PyTorch's map is string -> bool: an integer given to it arrives as a flag (what the README says).
    tensor = torch.ones(2, device="fake")
    torch._utils.set_tensor_metadata(tensor, {"format_number": 29})
    assert torch._utils.get_tensor_metadata(tensor) == {"format_number": True}
    torch_backend.set_tensor_metadata(tensor, "format_number", 29)
    assert torch._utils.get_tensor_metadata(tensor)["format_number=29"] is True
    assert torch_backend.tensor_metadata(tensor)["format_number"] == 29


def test_numbers_round_trip():
    tensor = formatted(29)
    assert torch_backend.tensor_metadata(tensor) == {"format": 29, "nz": 1}
    torch_backend.set_tensor_metadata(tensor, "format", -3)
    assert torch_backend.tensor_metadata(tensor)["format"] == -3
    assert torch_backend.tensor_metadata(torch.ones(2, device="fake")) == {}


@pytest.mark.parametrize(
    "make",
    [
        lambda t: t.view(12),
        lambda t: t.reshape(4, 3),
        lambda t: t.t(),
        lambda t: t[1:],
        lambda t: t[:, 2],
        lambda t: t.unsqueeze(0).expand(2, 3, 4),
        lambda t: t.detach(),
        lambda t: t.data,
        lambda t: t.clone(),
        lambda t: t.to("fake:1"),
        lambda t: copy.deepcopy(t),
    ],
    ids=["view", "reshape", "t", "slice", "select", "expand", "detach", "data", "clone", "to fake:1", "deepcopy"],
)
def test_views_and_copies_carry_it(make):
    tensor = formatted()
    result = make(tensor)
    assert result.device.type == "fake"
    assert torch_backend.tensor_metadata(result) == {"format": 29, "nz": 1}
    # A copy of the metadata, not a shared one.
    torch_backend.set_tensor_metadata(result, "format", 7)
    assert torch_backend.tensor_metadata(tensor)["format"] == 29


def test_a_destination_keeps_its_own():
    source, destination = formatted(29), torch.zeros(3, 4, device="fake")
    torch_backend.set_tensor_metadata(destination, "format", 2)
    destination.copy_(source)
    assert torch_backend.tensor_metadata(destination) == {"format": 2}
    torch.testing.assert_close(destination.cpu(), source.cpu())


def test_the_cpu_holds_none():
    assert torch_backend.tensor_metadata(formatted().cpu()) == {}
    with pytest.raises(ValueError, match="device tensors only"):
        torch_backend.set_tensor_metadata(torch.ones(2), "format", 1)
    with pytest.raises(ValueError, match="invalid backend metadata name"):
        torch_backend.set_tensor_metadata(torch.ones(2, device="fake"), "a=b", 1)
    with pytest.raises(TypeError, match="integers"):
        torch_backend.set_tensor_metadata(torch.ones(2, device="fake"), "format", 1.5)


def test_save_and_load_keep_it():
    tensor = formatted(29)
    buffer = io.BytesIO()
    torch.save({"weight": tensor, "plain": torch.ones(2, device="fake")}, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    assert loaded["weight"].device.type == "fake"
    assert torch_backend.tensor_metadata(loaded["weight"]) == {"format": 29, "nz": 1}
    assert torch_backend.tensor_metadata(loaded["plain"]) == {}
    torch.testing.assert_close(loaded["weight"].cpu(), tensor.cpu())
    buffer.seek(0)
    on_cpu = torch.load(buffer, map_location="cpu")  # the CPU has no place for it
    assert on_cpu["weight"].device.type == "cpu" and torch_backend.tensor_metadata(on_cpu["weight"]) == {}


def test_parameters_of_a_module_keep_it():
    module = torch.nn.Linear(4, 2).to("fake")
    torch_backend.set_tensor_metadata(module.weight, "format", 29)
    module.weight.requires_grad_(False)
    assert torch_backend.tensor_metadata(module.state_dict()["weight"]) == {"format": 29}
    buffer = io.BytesIO()
    torch.save(module.state_dict(), buffer)
    buffer.seek(0)
    assert torch_backend.tensor_metadata(torch.load(buffer)["weight"]) == {"format": 29}


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compiled_views_and_copies_keep_it(backend):
    # Dynamo traces on fake tensors; the compiled graph's views and copies of a real input
    # are made by core's kernels again, so they carry the metadata as in eager mode.
    tensor = formatted()
    view, copied, computed = torch.compile(lambda t: (t.view(12)[2:], t.clone(), t * 2), backend=backend)(tensor)
    assert torch_backend.tensor_metadata(view) == {"format": 29, "nz": 1}
    assert torch_backend.tensor_metadata(copied) == {"format": 29, "nz": 1}
    assert torch_backend.tensor_metadata(computed) == {}  # a new value, in no particular format
    torch.testing.assert_close(computed.cpu(), tensor.cpu() * 2)
