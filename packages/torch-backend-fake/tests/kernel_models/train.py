"""Trains a small model on CPU and on the device from the same start; prints JSON.

Used by test_kernels.py with TORCH_BACKEND_FALLBACK=error (so any op of the
step that still runs on the CPU fallback fails the script) and fake's kernels
on. Models: an MLP, a CNN with BatchNorm (convolution and max pooling stay on
the fallback: the test runs it without the error policy), and a GPT-style
Transformer (embedding, layer_norm, attention from matmul + softmax, GELU,
dropout, cross_entropy). Usage: train.py MODEL STEPS DROPOUT SEED
"""

from __future__ import annotations

import copy
import json
import sys

import torch
import torch.nn as nn
from torch.nn import functional as F  # noqa: N812 (PyTorch's own spelling)

VOCAB, WIDTH, HEADS, CONTEXT = 64, 32, 4, 16


class Block(nn.Module):
    def __init__(self, dropout: float) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.qkv, self.proj = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
        self.fc, self.fc2 = nn.Linear(WIDTH, 4 * WIDTH), nn.Linear(4 * WIDTH, WIDTH)
        self.drop = nn.Dropout(dropout)
        # Built once, as nanoGPT does: the step only slices it.
        self.register_buffer("causal", torch.ones(CONTEXT, CONTEXT).tril().view(1, 1, CONTEXT, CONTEXT))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(WIDTH, dim=-1)
        q, k, v = (t.view(batch, length, HEADS, -1).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
        att = att.masked_fill(self.causal[:, :, :length, :length] == 0, float("-inf"))
        att = self.drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(batch, length, WIDTH)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.fc2(F.gelu(self.fc(self.ln2(x)))))


class Gpt(nn.Module):
    def __init__(self, dropout: float) -> None:
        super().__init__()
        self.tokens, self.positions = nn.Embedding(VOCAB, WIDTH), nn.Embedding(CONTEXT, WIDTH)
        self.blocks = nn.Sequential(Block(dropout), Block(dropout))
        self.ln, self.head = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, VOCAB)
        self.drop = nn.Dropout(dropout)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.drop(self.tokens(idx) + self.positions(positions))
        return self.head(self.ln(self.blocks(x)))


def build(name: str, dropout: float) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    if name == "mlp":
        model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 5))
        return model, torch.randn(16, 20), torch.randint(0, 5, (16,))
    if name == "cnn":
        model = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1, bias=False),  # BatchNorm cancels a bias (its grad is noise)
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(8 * 4 * 4, 10),
        )
        return model, torch.randn(8, 3, 8, 8), torch.randint(0, 10, (8,))
    model = Gpt(dropout)
    return model, torch.randint(0, VOCAB, (4, CONTEXT)), torch.randint(0, VOCAB, (4, CONTEXT))


def train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, steps: int) -> list[float]:
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return [loss.item() for loss in losses]


def main() -> None:
    name, steps, dropout, seed = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    torch.manual_seed(seed)
    model, x, y = build(name, dropout)
    device_model = copy.deepcopy(model).to("fake")
    cpu_losses = train(model, x, y, steps)
    torch.manual_seed(seed)  # the device generator: dropout masks follow the seed
    device_losses = train(device_model, x.to("fake"), y.to("fake"), steps)
    cpu_state, device_state = model.state_dict(), device_model.state_dict()
    state_error = {
        key: (device_state[key].cpu().double() - value.double()).abs().max().item()
        for key, value in cpu_state.items()
        if value.is_floating_point()
    }
    json.dump({"cpu": cpu_losses, "device": device_losses, "state_error": state_error}, sys.stdout)


if __name__ == "__main__":
    main()
