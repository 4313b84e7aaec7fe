"""LSTM and GRU on the device: cells, stacked and bidirectional layers, packed sequences, training.

ATen runs recurrent layers on any non-CPU device through fused cell ops that only
CUDA and XPU implement (``_thnn_fused_lstm_cell``, ``_thnn_fused_gru_cell``); core
composes them from ordinary ops (RnnCells.cpp). Every result and gradient here is
compared with the same module on the CPU. CI runs this in both memory modes.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

TOLERANCE = {"atol": 1e-5, "rtol": 1e-4}


def assert_same_gradients(device_module: nn.Module, cpu_module: nn.Module) -> None:
    for (name, on_device), on_cpu in zip(device_module.named_parameters(), cpu_module.parameters(), strict=True):
        assert on_device.grad is not None, f"{name} got no gradient"
        torch.testing.assert_close(on_device.grad.cpu(), on_cpu.grad, **TOLERANCE, msg=name)


def both(module: nn.Module) -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(0)
    return copy.deepcopy(module).to("fake"), module


@pytest.mark.parametrize("bias", [True, False])
def test_lstm_cell_matches_cpu(bias: bool) -> None:
    device_cell, cpu_cell = both(nn.LSTMCell(6, 5, bias=bias))
    x, h, c = torch.randn(3, 6, requires_grad=True), torch.randn(3, 5), torch.randn(3, 5, requires_grad=True)
    xd, cd = x.detach().to("fake").requires_grad_(), c.detach().to("fake").requires_grad_()
    hy_d, cy_d = device_cell(xd, (h.to("fake"), cd))
    hy, cy = cpu_cell(x, (h, c))
    torch.testing.assert_close(hy_d.cpu(), hy, **TOLERANCE)
    torch.testing.assert_close(cy_d.cpu(), cy, **TOLERANCE)
    (hy_d.sin().sum() + cy_d.square().sum()).backward()
    (hy.sin().sum() + cy.square().sum()).backward()
    torch.testing.assert_close(xd.grad.cpu(), x.grad, **TOLERANCE)
    torch.testing.assert_close(cd.grad.cpu(), c.grad, **TOLERANCE)
    assert_same_gradients(device_cell, cpu_cell)


@pytest.mark.parametrize("bias", [True, False])
def test_gru_cell_matches_cpu(bias: bool) -> None:
    device_cell, cpu_cell = both(nn.GRUCell(6, 5, bias=bias))
    x, h = torch.randn(3, 6, requires_grad=True), torch.randn(3, 5, requires_grad=True)
    xd, hd = x.detach().to("fake").requires_grad_(), h.detach().to("fake").requires_grad_()
    out_d = device_cell(xd, hd)
    out = cpu_cell(x, h)
    torch.testing.assert_close(out_d.cpu(), out, **TOLERANCE)
    out_d.cos().sum().backward()
    out.cos().sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), x.grad, **TOLERANCE)
    torch.testing.assert_close(hd.grad.cpu(), h.grad, **TOLERANCE)
    assert_same_gradients(device_cell, cpu_cell)


@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_stacked_layers_match_cpu(kind: type[nn.RNNBase], bidirectional: bool) -> None:
    device_rnn, cpu_rnn = both(kind(4, 8, num_layers=2, bidirectional=bidirectional, batch_first=True))
    x = torch.randn(3, 7, 4)
    out_d, state_d = device_rnn(x.to("fake"))
    out, state = cpu_rnn(x)
    torch.testing.assert_close(out_d.cpu(), out, **TOLERANCE)
    for got, expected in zip(
        state_d if kind is nn.LSTM else (state_d,), state if kind is nn.LSTM else (state,), strict=True
    ):
        torch.testing.assert_close(got.cpu(), expected, **TOLERANCE)
    out_d.square().mean().backward()
    out.square().mean().backward()
    assert_same_gradients(device_rnn, cpu_rnn)


@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU])
def test_packed_sequences_match_cpu(kind: type[nn.RNNBase]) -> None:
    device_rnn, cpu_rnn = both(kind(4, 6, bidirectional=True))
    lengths = torch.tensor([5, 3, 2])
    x = torch.randn(5, 3, 4)
    packed_d = pack_padded_sequence(x.to("fake"), lengths)
    out_d, _ = device_rnn(packed_d)
    out, _ = cpu_rnn(pack_padded_sequence(x, lengths))
    padded_d, lengths_d = pad_packed_sequence(out_d)
    padded, _ = pad_packed_sequence(out)
    assert padded_d.device.type == "fake"
    torch.testing.assert_close(padded_d.cpu(), padded, **TOLERANCE)
    assert lengths_d.tolist() == [5, 3, 2]
    padded_d.sum().backward()
    padded.sum().backward()
    assert_same_gradients(device_rnn, cpu_rnn)


def test_double_backward_through_the_cell() -> None:
    # With create_graph, autograd differentiates the cell by its differentiable formula.
    device_cell, cpu_cell = both(nn.LSTMCell(3, 2))
    x = torch.randn(2, 3)
    grads = []
    for cell, inp in ((device_cell, x.to("fake").requires_grad_()), (cpu_cell, x.clone().requires_grad_())):
        hy, _ = cell(inp)
        (g,) = torch.autograd.grad(hy.sum(), inp, create_graph=True)
        g.square().sum().backward()
        grads.append(cell.weight_ih.grad.cpu())
    torch.testing.assert_close(grads[0], grads[1], **TOLERANCE)


def test_bad_state_size_is_a_clear_error() -> None:
    cell = nn.LSTMCell(4, 3).to("fake")
    with pytest.raises(RuntimeError, match="hidden"):
        cell(torch.randn(2, 4, device="fake"), (torch.randn(2, 5, device="fake"), torch.randn(2, 5, device="fake")))


class SequenceModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(20, 8)
        self.lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.head = nn.Linear(16, 20)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.lstm(self.embedding(tokens))
        return self.head(hidden)


def test_sequence_model_trains_like_cpu() -> None:
    # The acceptance workload: embedding -> 2-layer LSTM -> linear, 10 steps.
    torch.manual_seed(0)
    cpu_model = SequenceModel()
    device_model = copy.deepcopy(cpu_model).to("fake")
    generator = torch.Generator().manual_seed(1)
    # A learnable sequence (each token the previous one plus 1), so the loss must fall.
    starts = [torch.randint(0, 20, (4, 1), generator=generator) for _ in range(10)]
    batches = [(start + torch.arange(9)) % 20 for start in starts]
    losses = {}
    for name, model, device in (("fake", device_model, "fake"), ("cpu", cpu_model, "cpu")):
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        losses[name] = []
        for tokens in batches:
            tokens = tokens.to(device)
            logits = model(tokens[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, 20), tokens[:, 1:].reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses[name].append(loss.item())
    torch.testing.assert_close(torch.tensor(losses["fake"]), torch.tensor(losses["cpu"]), atol=1e-4, rtol=1e-4)
    assert losses["cpu"][-1] < losses["cpu"][0]
    for (name, on_device), on_cpu in zip(
        device_model.state_dict().items(), cpu_model.state_dict().values(), strict=True
    ):
        torch.testing.assert_close(on_device.cpu(), on_cpu, atol=1e-4, rtol=1e-4, msg=name)
