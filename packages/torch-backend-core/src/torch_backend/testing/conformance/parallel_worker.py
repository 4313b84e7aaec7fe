"""One rank of a 4-rank parallelism scenario: ``python parallel_worker.py SCENARIO PORT RANK 4``.

Each scenario runs the same code twice in the same processes, on the device and on the CPU (whose
tensors the group's backend hands to Gloo), and compares the two; exits 0 only if every check held.
Run by test_parallelism.py (its name keeps pytest from collecting it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from torch_backend.testing.conformance.distributed_worker import DEVICE, dev, join

FEATURES, HIDDEN, PER_RANK, STEPS = 8, 16, 4, 3
#: float32 results on the device and on the CPU agree to this (the issue's bound).
FLOAT32_TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}
#: bfloat16 parameters in the forward and backward (mixed precision): bfloat16's resolution.
BFLOAT16_TOLERANCE = {"rtol": 1.6e-2, "atol": 1e-3}


def device_of(kind: str) -> torch.device:
    return torch.device(DEVICE, dev.current_device()) if kind == DEVICE else torch.device("cpu")


def make_model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)  # the same initial parameters on every rank and on both devices
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, FEATURES))


def batches(count: int, size: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(size, FEATURES, generator=generator), torch.randn(size, FEATURES, generator=generator))
            for _ in range(count)]  # fmt: skip


def full_parameters(model: nn.Module) -> dict[str, torch.Tensor]:
    from torch.distributed.tensor import DTensor

    return {
        name: (p.full_tensor() if isinstance(p, DTensor) else p).detach().float().cpu()
        for name, p in model.named_parameters()
    }


def compare(got: dict[str, torch.Tensor], want: dict[str, torch.Tensor], what: str, tolerance: dict) -> None:
    assert got.keys() == want.keys(), (got.keys(), want.keys())
    for name in got:
        torch.testing.assert_close(got[name], want[name], **tolerance, msg=lambda m, name=name: f"{what}, {name}: {m}")


def train_2d(kind: str, mixed_precision: bool) -> nn.Module:
    """FSDP2 over the mesh's data dimension, tensor parallelism (colwise, then rowwise) over its tensor
    dimension; each data rank trains on its share of every batch."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    device = device_of(kind)
    mesh = init_device_mesh(kind, (2, 2), mesh_dim_names=("data", "tensor"))
    model = parallelize_module(
        make_model().to(device), mesh["tensor"], {"0": ColwiseParallel(), "2": RowwiseParallel()}
    )
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if mixed_precision else None
    fully_shard(model, mesh=mesh["data"], **({"mp_policy": policy} if policy else {}))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    rows = slice(mesh["data"].get_local_rank() * PER_RANK, (mesh["data"].get_local_rank() + 1) * PER_RANK)
    for x, y in batches(STEPS, 2 * PER_RANK):
        optimizer.zero_grad()
        out = model(x[rows].to(device))
        nn.functional.mse_loss(out.float(), y[rows].to(device)).backward()
        optimizer.step()
    return model


def scenario_mesh_2d(rank: int, world: int) -> None:
    """A (data 2, tensor 2) mesh with TP and FSDP2, in float32 and with bfloat16 mixed precision."""
    for mixed_precision, tolerance in ((False, FLOAT32_TOLERANCE), (True, BFLOAT16_TOLERANCE)):
        on_device = full_parameters(train_2d(DEVICE, mixed_precision))
        on_cpu = full_parameters(train_2d("cpu", mixed_precision))
        compare(on_device, on_cpu, f"2-D mesh, mixed precision {mixed_precision}", tolerance)
    # And both equal one process training on the whole batches (float32).
    reference = make_model()
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for x, y in batches(STEPS, 2 * PER_RANK):
        optimizer.zero_grad()
        nn.functional.mse_loss(reference(x), y).backward()
        optimizer.step()
    compare(
        full_parameters(train_2d(DEVICE, False)),
        full_parameters(reference),
        "2-D mesh vs one process",
        FLOAT32_TOLERANCE,
    )


def scenario_checkpoint(rank: int, world: int) -> None:
    """torch.distributed.checkpoint: saved from the 2-D (FSDP2 x TP) layout, loaded into a 1-D FSDP2 one."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    folder = Path(os.environ["PARALLEL_TEST_DIR"])
    results = {}
    for kind in (DEVICE, "cpu"):
        trained = train_2d(kind, mixed_precision=False)
        saved = full_parameters(trained)
        checkpoint = folder / f"checkpoint-{kind}"
        dcp.save(get_model_state_dict(trained), checkpoint_id=str(checkpoint))
        fresh = make_model(seed=7).to(device_of(kind))  # other values: the load must overwrite them
        fully_shard(fresh, mesh=init_device_mesh(kind, (world,)))
        state = get_model_state_dict(fresh)
        dcp.load(state, checkpoint_id=str(checkpoint))
        set_model_state_dict(fresh, state)
        results[kind] = full_parameters(fresh)
        compare(results[kind], saved, f"{kind}: loaded 1-D vs saved 2-D", {"rtol": 0, "atol": 0})
    compare(results[DEVICE], results["cpu"], "checkpoint round trip, device vs CPU", FLOAT32_TOLERANCE)


def scenario_pipeline(rank: int, world: int) -> None:
    """A 4-stage pipeline (one Linear + ReLU per rank), GPipe over 4 micro-batches."""
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    def stages() -> nn.Sequential:
        torch.manual_seed(0)
        return nn.Sequential(*[nn.Sequential(nn.Linear(FEATURES, FEATURES), nn.Tanh()) for _ in range(world)])

    data = batches(STEPS, 4 * PER_RANK)
    results, losses = {}, {}
    for kind in (DEVICE, "cpu"):
        device = device_of(kind)
        module = stages()[rank].to(device)
        stage = PipelineStage(module, stage_index=rank, num_stages=world, device=device)
        schedule = ScheduleGPipe(stage, n_microbatches=4, loss_fn=nn.functional.mse_loss)
        optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
        losses[kind] = []
        for x, y in data:
            optimizer.zero_grad()
            if rank == 0:
                schedule.step(x.to(device))
            elif rank == world - 1:
                step_losses: list[torch.Tensor] = []
                schedule.step(target=y.to(device), losses=step_losses)
                losses[kind].append(torch.stack(step_losses).mean().item())
            else:
                schedule.step()
            optimizer.step()
        results[kind] = {name: p.detach().cpu() for name, p in module.named_parameters()}
    compare(results[DEVICE], results["cpu"], f"pipeline stage {rank}, device vs CPU", FLOAT32_TOLERANCE)
    # One process training the whole model on the whole batches: the same stage parameters.
    reference = stages()
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for x, y in data:
        optimizer.zero_grad()
        nn.functional.mse_loss(reference(x), y).backward()
        optimizer.step()
    want = {name: p.detach() for name, p in reference[rank].named_parameters()}
    compare(results[DEVICE], want, f"pipeline stage {rank} vs one process", FLOAT32_TOLERANCE)
    if rank == world - 1:
        assert losses[DEVICE] == losses["cpu"] or all(
            abs(a - b) <= 1e-5 for a, b in zip(losses[DEVICE], losses["cpu"], strict=True)
        ), losses


SCENARIOS = {name.removeprefix("scenario_"): f for name, f in globals().items() if name.startswith("scenario_")}


def main() -> None:
    scenario, port, rank, world = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    dev.set_device(rank % dev.device_count())
    join(port, rank, world, float(os.environ.get("DIST_TEST_TIMEOUT_S", "120")), bind_device=True)
    SCENARIOS[scenario](rank, world)
    dist.destroy_process_group()
    print(f"rank {rank}: {scenario} ok", flush=True)


if __name__ == "__main__":
    main()
