"""Short training runs on the device give CPU's losses (same seed, same data)."""

import pytest
import torch
from torch import nn

from torch_backend.testing import dropout_on_device
from torch_backend.testing.conformance._support import DEVICE

STEPS = 4
# On core's fallback dropout draws from the device generator, whose algorithm
# is the CPU's: same masks. A device's dropout kernel draws from its own (as a
# GPU's does), so then the runs compare without dropout.
DROPOUT = 0.0 if dropout_on_device() else 0.1
# Room for a device's own reduction order over four steps (float32; TF32 off).
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


def small_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Dropout(DROPOUT), nn.Linear(16, 10),
    )  # fmt: skip


def small_transformer() -> nn.Module:
    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(50, 32)
            layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=DROPOUT, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(32, 50)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            return self.head(self.encoder(self.embed(tokens)))

    return Model()


def batches(kind: str):
    g = torch.Generator().manual_seed(0)
    if kind == "cnn":
        return [(torch.randn(4, 3, 16, 16, generator=g), torch.randint(0, 10, (4,), generator=g)) for _ in range(STEPS)]
    return [
        (torch.randint(0, 50, (4, 12), generator=g), torch.randint(0, 50, (4, 12), generator=g)) for _ in range(STEPS)
    ]


def train(kind: str, device: str, autocast_dtype: torch.dtype | None = None) -> list[float]:
    torch.manual_seed(0)
    model = (small_cnn() if kind == "cnn" else small_transformer()).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    losses = []
    torch.manual_seed(1)  # same dropout masks on the fallback: device generators follow the CPU's algorithm
    for inputs, targets in batches(kind):
        inputs, targets = inputs.to(device), targets.to(device)
        opt.zero_grad()
        with torch.autocast(
            device.split(":")[0], dtype=autocast_dtype or torch.bfloat16, enabled=autocast_dtype is not None
        ):
            out = model(inputs)
            loss = nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]).float(), targets.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("kind", ["cnn", "transformer"])
def test_losses_match_cpu(kind):
    torch.testing.assert_close(train(kind, DEVICE), train(kind, "cpu"), **TOLERANCE)


@pytest.mark.parametrize("kind", ["cnn", "transformer"])
def test_losses_match_cpu_under_bfloat16_autocast(kind):
    device = train(kind, DEVICE, torch.bfloat16)
    cpu = train(kind, "cpu", torch.bfloat16)
    # Same casts (CUDA's op lists) and kernels as CPU autocast except where
    # CPU's own list differs from CUDA's; bfloat16 leaves ~3 significant digits.
    torch.testing.assert_close(device, cpu, rtol=2e-2, atol=2e-2)
