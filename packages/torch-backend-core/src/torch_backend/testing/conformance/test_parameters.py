"""Parameters keep their identity across devices, as with CUDA: `module.to(device)` and back keep each
`Parameter` object (so weight ties, optimizers made before the move and hooks stay valid), and
`param.data = tensor` works both ways."""

from __future__ import annotations

import torch
from torch import nn

from torch_backend.testing.conformance._support import DEVICE


def tied_model() -> nn.Module:
    """An embedding and an output projection sharing one weight (GPT-2's lm_head, T5's)."""
    torch.manual_seed(0)
    model = nn.Module()
    model.embed = nn.Embedding(8, 4)
    model.head = nn.Linear(4, 8, bias=False)
    model.head.weight = model.embed.weight
    return model


def test_to_device_keeps_ties_and_parameter_objects():
    model = tied_model()
    before = list(model.parameters())
    weight = model.embed.weight
    expected = weight.detach().clone()
    assert model.to(DEVICE) is model
    assert model.embed.weight is model.head.weight is weight
    assert list(model.parameters()) == before and len(before) == 1
    assert weight.device.type == DEVICE and isinstance(weight, nn.Parameter) and weight.requires_grad
    torch.testing.assert_close(weight.detach().cpu(), expected)


def test_to_device_and_back_keeps_ties_and_values():
    model = tied_model()
    weight = model.embed.weight
    expected = weight.detach().clone()
    model.to(DEVICE)
    with torch.no_grad():
        weight.add_(1.0)
    model.to("cpu")
    assert model.embed.weight is model.head.weight is weight and weight.device.type == "cpu"
    torch.testing.assert_close(weight.detach(), expected + 1.0)


def test_training_updates_the_one_shared_weight():
    """Gradients of both uses accumulate in the one parameter, as on CPU."""
    results = []
    for device in ("cpu", DEVICE):
        model = tied_model().to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        tokens = torch.tensor([[1, 2, 3]], device=device)
        for _ in range(2):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model.head(model.embed(tokens))[0], tokens[0]).backward()
            optimizer.step()
        results.append(model.embed.weight.detach().cpu())
    torch.testing.assert_close(results[1], results[0], rtol=1e-5, atol=1e-6)


def test_optimizer_made_before_the_move_updates_the_moved_parameters():
    model = nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    model.to(DEVICE)
    assert optimizer.param_groups[0]["params"][0] is model.weight
    before = model.weight.detach().cpu()
    model(torch.ones(1, 3, device=DEVICE)).sum().backward()
    optimizer.step()
    torch.testing.assert_close(model.weight.detach().cpu(), before - 1.0)


def test_gradients_move_with_their_parameters():
    model = nn.Linear(3, 2)
    model(torch.ones(1, 3)).sum().backward()
    weight = model.weight
    model.to(DEVICE)
    assert model.weight is weight and weight.grad.device.type == DEVICE
    torch.testing.assert_close(weight.grad.cpu(), torch.ones(2, 3))


def test_setting_data_across_devices_both_ways():
    param = nn.Parameter(torch.zeros(2))
    param.data = torch.ones(2, device=DEVICE)
    assert param.device.type == DEVICE and isinstance(param, nn.Parameter) and param.requires_grad
    torch.testing.assert_close(param.detach().cpu(), torch.ones(2))
    (param * 3).sum().backward()
    torch.testing.assert_close(param.grad.cpu(), torch.full((2,), 3.0))
    param.data = torch.full((2,), 5.0)
    assert param.device.type == "cpu"
    torch.testing.assert_close(param.detach(), torch.full((2,), 5.0))


def test_setting_data_of_another_layout_is_still_refused():
    """Only dense tensors are interchangeable; PyTorch's error stands for the rest."""
    param = nn.Parameter(torch.zeros(2, 2, device=DEVICE))
    sparse = torch.eye(2).to_sparse()
    try:
        param.data = sparse
    except RuntimeError as error:
        assert "incompatible tensor type" in str(error), error
    else:
        raise AssertionError("a dense device parameter took a sparse CPU tensor's data")


def test_half_on_the_device_keeps_ties():
    model = tied_model().to(DEVICE)
    weight = model.embed.weight
    model.half()
    assert model.embed.weight is model.head.weight is weight and weight.dtype == torch.float16
    assert weight.device.type == DEVICE


def test_load_state_dict_into_a_tied_model_on_the_device():
    source = tied_model()
    with torch.no_grad():
        source.embed.weight.mul_(2.0)
    model = tied_model().to(DEVICE)
    model.load_state_dict(source.state_dict())
    assert model.embed.weight is model.head.weight and model.embed.weight.device.type == DEVICE
    torch.testing.assert_close(model.head.weight.detach().cpu(), source.embed.weight.detach())


def test_inference_mode_move_keeps_ties():
    model = tied_model()
    with torch.inference_mode():
        model.to(DEVICE)
    assert model.embed.weight is model.head.weight and model.embed.weight.device.type == DEVICE
