"""The models the benchmarks train, written here so that every benchmark (and a machine without
torchvision or transformers) builds the same ones."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


class BasicBlock(nn.Module):
    """ResNet's two 3x3 convolutions with BatchNorm and a shortcut (a strided 1x1 one where the shape changes)."""

    def __init__(self, inputs: int, outputs: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.shortcut = nn.Identity()
        if stride != 1 or inputs != outputs:
            self.shortcut = nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


def resnet18(classes: int = 10, width: int = 64) -> nn.Module:
    """torchvision's ResNet-18 layout (7x7 stem, max pool, four stages of two basic blocks, average pool);
    ``width`` scales the channels (64 is ResNet-18's own)."""
    stages, inputs = [], width
    for index, outputs in enumerate((width, 2 * width, 4 * width, 8 * width)):
        stride = 1 if index == 0 else 2
        stages += [BasicBlock(inputs, outputs, stride), BasicBlock(outputs, outputs, 1)]
        inputs = outputs
    return nn.Sequential(
        nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1),
        *stages, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inputs, classes),
    )  # fmt: skip


class TinyGPT(nn.Module):
    """Token and position embeddings, pre-norm causal Transformer blocks, a language-model head."""

    def __init__(self, vocab: int, width: int, layers: int, sequence: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(sequence, width)
        block = nn.TransformerEncoderLayer(
            width, max(1, width // 64), 4 * width, dropout=0.1, activation="gelu", batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(sequence), persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        hidden = self.blocks(self.tokens(ids) + self.positions(positions), mask=self.mask, is_causal=True)
        return self.head(hidden).flatten(0, 1)


def small_cnn(channels: int) -> nn.Module:
    """Two convolutions with BatchNorm (the second doubling the channels), max and average pooling, a
    classifier over 10 classes."""
    return nn.Sequential(
        nn.Conv2d(3, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(channels, 2 * channels, 3, padding=1), nn.BatchNorm2d(2 * channels), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * channels, 10),
    )  # fmt: skip


def resnet18_training(device: torch.device, width: int, batch: int, side: int) -> Callable[[], None]:
    """Three ResNet-18 training steps (SGD with momentum, as ResNets are trained) on one batch of images."""
    torch.manual_seed(0)
    model = resnet18(10, width).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images, labels = torch.randn(batch, 3, side, side, device=device), torch.randint(0, 10, (batch,), device=device)

    def steps() -> None:
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(model(images), labels).backward()
            optimizer.step()

    return steps
