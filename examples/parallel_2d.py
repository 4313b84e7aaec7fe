"""2-D parallelism on the active torch-backend device: FSDP2 over data-parallel ranks, tensor
parallelism within each, on one device mesh.

    torchrun --nproc-per-node 4 examples/parallel_2d.py [--steps 5]

The four ranks form a (data 2, tensor 2) mesh. The MLP's first layer is split by columns and its
second by rows across the tensor dimension (`parallelize_module`), then sharded across the data
dimension (`fully_shard`); each data rank trains on its half of every global batch. At the end
every rank gathers the full parameters and checks them against one process training on the
whole batches on the CPU; exits non-zero otherwise.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

FEATURES, HIDDEN, PER_RANK = 8, 16, 4


def make_model() -> nn.Module:
    torch.manual_seed(0)  # the same initial parameters on every rank and in the reference
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, FEATURES))


def batches(steps: int, data_ranks: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(1)
    size = data_ranks * PER_RANK
    return [(torch.randn(size, FEATURES, generator=generator), torch.randn(size, FEATURES, generator=generator))
            for _ in range(steps)]  # fmt: skip


def train(model: nn.Module, data: list[tuple[torch.Tensor, torch.Tensor]], device: torch.device, rows: slice) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in data:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x[rows].to(device)), y[rows].to(device)).backward()
        optimizer.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    accelerator = torch.accelerator.current_accelerator()
    assert accelerator is not None, "no accelerator: set TORCH_BACKEND=<name> of an installed backend"
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    assert world == 4, "run with torchrun --nproc-per-node 4"
    device = torch.device(accelerator.type, int(os.environ["LOCAL_RANK"]) % torch.accelerator.device_count())
    torch.accelerator.set_device_index(device.index)
    dist.init_process_group(device_id=device)  # the device's own c10d backend
    mesh = init_device_mesh(accelerator.type, (2, 2), mesh_dim_names=("data", "tensor"))
    model = parallelize_module(
        make_model().to(device), mesh["tensor"], {"0": ColwiseParallel(), "2": RowwiseParallel()}
    )
    fully_shard(model, mesh=mesh["data"])
    data = batches(args.steps, 2)
    data_rank = mesh["data"].get_local_rank()
    train(model, data, device, slice(data_rank * PER_RANK, (data_rank + 1) * PER_RANK))

    reference = make_model()
    train(reference, data, torch.device("cpu"), slice(None))
    for (name, got), want in zip(model.named_parameters(), reference.parameters(), strict=True):
        full = got.full_tensor() if isinstance(got, DTensor) else got
        torch.testing.assert_close(full.cpu(), want.detach(), rtol=1e-4, atol=1e-5, msg=name)
    print(f"rank {rank}: 2-D (data 2 x tensor 2) training on {accelerator.type} equals one CPU process: ok")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
