"""torch.save / torch.load of device tensors and modules."""

import io

import torch

from torch_backend.testing.conformance._support import DEVICE, needs_two_devices, on


def round_trip(obj, **load_kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, **load_kwargs)


@needs_two_devices
def test_tensor_round_trip_keeps_device_and_values():
    x = torch.randn(3, 4, device=DEVICE)
    y = round_trip(x)
    assert y.device == x.device and torch.equal(y.cpu(), x.cpu())
    z = round_trip(torch.arange(5.0, device=on(1)))
    assert z.device == torch.device(on(1))


def test_views_saved_together_share_storage_after_load():
    base = torch.arange(10.0, device=DEVICE)
    loaded = round_trip({"base": base, "view": base[2:5]})
    loaded["base"][3] = 100
    assert loaded["view"][1].item() == 100


@needs_two_devices
def test_state_dict_from_second_device_onto_cpu():
    model = torch.nn.Linear(4, 3).to(on(1))
    state = round_trip(model.state_dict(), map_location="cpu")
    assert all(t.device.type == "cpu" for t in state.values())
    reference = {k: v.cpu() for k, v in model.state_dict().items()}
    assert all(torch.equal(state[k], reference[k]) for k in reference)


@needs_two_devices
def test_cpu_checkpoint_onto_device_and_weights_only():
    model = torch.nn.Linear(4, 3)
    state = round_trip(model.state_dict(), map_location=on(1), weights_only=True)
    assert all(t.device == torch.device(on(1)) for t in state.values())
    on_device = torch.nn.Linear(4, 3).to(DEVICE)
    on_device.load_state_dict(state)
    assert torch.equal(on_device.weight.cpu(), model.weight)


def test_device_checkpoint_with_weights_only():
    x = {"w": torch.randn(2, 2, device=DEVICE)}
    y = round_trip(x, weights_only=True)
    assert y["w"].device == torch.device(on(0)) and torch.equal(y["w"].cpu(), x["w"].cpu())


def test_whole_module_round_trip():
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()).to(DEVICE)
    loaded = round_trip(model, weights_only=False)
    x = torch.randn(5, 2, device=DEVICE)
    assert torch.equal(loaded(x).cpu(), model(x).cpu())
