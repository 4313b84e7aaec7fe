"""``python -m torch_backend.bench.graphs``: a training step replayed from a graph vs the same step
run eagerly on the device's kernels, each in its own process.

What a graph saves is the host's cost per launch: core's dispatch, the kernel call and the hand-off
to the device's queue, once per op. A replay costs one launch for the whole step (and one copy of
fresh random seeds when the step draws any). Each timing runs many steps and synchronises at the
end, so it counts the device's own work too. Ratios are per round (graph / eager, each the best of
its repeats), reported as median and interquartile spread.

On fake, run with its device kernels (``TORCH_BACKEND_FAKE_KERNELS=1``), in either memory mode
(``TORCH_BACKEND_FAKE_DISCRETE=1``). Both processes run with one OpenMP thread: fake's kernels are
ATen's CPU kernels on its stream's thread, and a simulated device whose kernels spread over the
host's cores competes with the host it is meant to relieve (on two cores, measured: replays 1.1-1.5x
the eager step with OpenMP's default threads, 0.18x with one).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from torch_backend.bench.separate import (
    add_process_arguments,
    device_under_test,
    median_and_spread,
    process_groups,
    run_workers,
    selected_cases,
    write_results,
)

STEPS = 200  # per timing

Step = Callable[[], object]


def _mlp() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    return model, torch.randn(16, 32), torch.randint(0, 10, (16,))


def _transformer() -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)
    model = nn.Sequential(
        nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), nn.Flatten(), nn.Linear(8 * 32, 10)
    )
    return model, torch.randn(4, 8, 32), torch.randint(0, 10, (4,))


@dataclass(frozen=True)
class GraphCase:
    name: str
    make: Callable[[], tuple[nn.Module, torch.Tensor, torch.Tensor]]
    target: float  # replayed / eager time per step, at most


CASES = [
    GraphCase("MLP 32-64-64-10 step, Adam", _mlp, 0.3),
    GraphCase("Transformer 2-layer step, Adam", _transformer, 0.4),
]


def training_step(case: GraphCase, device: torch.device, replayed: bool) -> Step:
    """``STEPS`` training steps (Adam with capturable=True), eager or as replays of one captured step."""
    module = sys.modules[f"torch.{device.type}"]
    torch.manual_seed(0)
    model, inputs, targets = case.make()
    model.to(device)
    inputs, targets = inputs.to(device), targets.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    loss_fn = nn.CrossEntropyLoss()

    def one_step() -> None:
        optimizer.zero_grad(set_to_none=False)
        loss_fn(model(inputs), targets).backward()
        optimizer.step()

    side = module.Stream()
    side.wait_stream(module.current_stream())
    with module.stream(side):  # warm-up: optimizer state and caches, off the default stream
        for _ in range(3):
            one_step()
    module.current_stream().wait_stream(side)
    if not replayed:
        return lambda: [one_step() for _ in range(STEPS)]
    graph = module.CUDAGraph() if device.type == "cuda" else module.Graph()  # --device cuda: the reference
    with module.graph(graph):
        one_step()
    return lambda: [graph.replay() for _ in range(STEPS)]


@dataclass(frozen=True)
class GraphResult:
    case: str
    eager_s: float  # per step, median over rounds
    replayed_s: float
    ratio: float
    spread: float
    target: float

    @property
    def met(self) -> bool:
        return self.ratio <= self.target


def worker(case_name: str, device_name: str, repeats: int, replayed: bool) -> float:
    """Best time per step of ``repeats`` timings of one case, in this process."""
    from torch_backend.bench._runner import _time_once

    case = next(c for c in CASES if c.name == case_name)
    device = torch.device(device_name, 0)
    run = training_step(case, device, replayed)
    _time_once(run, device)  # warm-up
    return min(_time_once(run, device) for _ in range(repeats)) / STEPS


def measure(cases: list[GraphCase], device_name: str, rounds: int, repeats: int) -> list[GraphResult]:
    """Eager and replayed times per step (medians over rounds) of cases that share their processes."""
    module, names = "torch_backend.bench.graphs", [case.name for case in cases]
    eager, replayed = [], []  # per round, per case
    for _ in range(rounds):
        eager.append(run_workers(module, names, device_name, device_name, repeats, "--mode", "eager"))
        replayed.append(run_workers(module, names, device_name, device_name, repeats, "--mode", "graph"))
    results = []
    for i, case in enumerate(cases):
        e, r = [times[i] for times in eager], [times[i] for times in replayed]
        ratio, spread = median_and_spread([b / a for a, b in zip(e, r, strict=True)])
        results.append(GraphResult(case.name, statistics.median(e), statistics.median(r), ratio, spread, case.target))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    add_process_arguments(parser, pairs="eager/graph", repeats=5, json_name="graphs.json")
    parser.add_argument("--mode", choices=["eager", "graph"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        for name in args.worker:
            print(worker(name, args.device, args.repeats, args.mode == "graph"), flush=True)
        return 0
    device_name, rounds, repeats = device_under_test(args, parser)
    os.environ["OMP_NUM_THREADS"] = "1"  # the workers' (see the module's doc)
    groups = process_groups(selected_cases(CASES, args), args.quick)
    results = [r for group in groups for r in measure(group, device_name, rounds, repeats)]
    print(f"{'case (separate processes)':<34}{'eager (us)':>12}{'graph (us)':>12}{'ratio':>8}{'spread':>8}"
          f"{'target':>10}  met?")  # fmt: skip
    for r in results:
        print(
            f"{r.case:<34}{r.eager_s * 1e6:>12.1f}{r.replayed_s * 1e6:>12.1f}{r.ratio:>8.2f}{r.spread:>8.2f}"
            f"{'<=':>4}{r.target:>6.2f}  {'yes' if r.met else 'NO'}"
        )
    print(f"wrote {write_results(results, args.json)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
