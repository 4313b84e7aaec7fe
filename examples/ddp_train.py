"""Data-parallel training on the active torch-backend device, one process per rank.

    torchrun --nproc-per-node 2 examples/ddp_train.py [--steps 10]

Each rank trains a DistributedDataParallel MLP on its slice of every global
batch; gradients are averaged by the device's c10d backend (the staged Gloo
backend by default). At the end it checks that every rank holds the same
parameters and that they equal one process training on the whole batches (on
CPU), and exits non-zero otherwise.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import torch_backend

FEATURES, CLASSES, PER_RANK = 16, 4, 8


def make_model() -> nn.Module:
    torch.manual_seed(0)  # the same initial parameters on every rank and in the reference
    return nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, CLASSES))


def global_batches(steps: int, world: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x = torch.randn(world * PER_RANK, FEATURES, generator=generator)
        yield x, torch.randint(0, CLASSES, (world * PER_RANK,), generator=generator)


def train(
    model: nn.Module, batches: Iterator[tuple[torch.Tensor, torch.Tensor]], device: torch.device, shard: slice
) -> list[float]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in batches:
        loss = nn.functional.cross_entropy(model(x[shard].to(device)), y[shard].to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def flat_parameters(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()

    backend = torch_backend.active_backend()
    if backend is None:
        raise SystemExit("no torch-backend device is active (is a backend installed? TORCH_BACKEND=none?)")
    device_module = getattr(torch, backend.name)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(backend.name, local_rank % device_module.device_count())
    device_module.set_device(device)

    dist.init_process_group(device_id=device)  # the device's default c10d backend
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DistributedDataParallel(make_model().to(device), device_ids=[device.index])
    shard = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
    losses = train(model, global_batches(args.steps, world), device, shard)

    mine = flat_parameters(model.module)
    everyone = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(everyone, mine)
    spread = max((other - mine).abs().max().item() for other in everyone)

    reference = make_model()
    train(reference, global_batches(args.steps, world), torch.device("cpu"), slice(None))
    error = (mine.cpu() - flat_parameters(reference)).abs().max().item()

    print(
        f"rank {rank}/{world} on {device} ({dist.get_backend_config()}): "
        f"loss {losses[0]:.4f} -> {losses[-1]:.4f}; max parameter difference "
        f"across ranks {spread:.2e}, vs one process on the whole batches {error:.2e}",
        flush=True,
    )
    dist.destroy_process_group()
    if spread != 0 or error > 1e-5:
        raise SystemExit(f"rank {rank}: DDP result differs (across ranks {spread:.2e}, vs reference {error:.2e})")


if __name__ == "__main__":
    main()
