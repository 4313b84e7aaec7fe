"""One rank of a stress scenario: ``python stress_worker.py SCENARIO PORT RANK WORLD``.

Users issue thousands of device operations between two host synchronisations (a training step with
hundreds of collectives, loops that never synchronise). Each scenario here does 100 times what a unit
test needs, and measures per operation the host time it costs at a small and at a large count and the
rank's resident memory; it prints a ``STRESS`` line per pattern (JSON) and exits 0 only if every value
checked and the cost stayed flat (``FLAT``) and memory bounded (``BOUNDED_MIB``). Run by test_stress.py
(its name keeps pytest from collecting it).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable

import torch
import torch.distributed as dist

from torch_backend.testing.conformance.distributed_worker import DEVICE, dev, join, single_tensor_collectives

all_gather_single, reduce_scatter_single = single_tensor_collectives()

#: The host's cost per call late in a large run over its cost early in it, at most (issue 68's bound: the
#: cost of the 10,000th call within 1.5x of the 100th's).
FLAT = 1.5
#: A large run's whole cost per call (its closing synchronisation, so the device's work, included) over the
#: cost with a synchronisation every few calls, at most. Looser than FLAT: with the host and the device's
#: threads both busy on two shared cores, a machine under CI's load slows the large run's overlap by up to
#: 1.6x (seen); a cost that grows with the calls in flight grows far past this.
WHOLE = 3.0
#: Rounds of the small and the large runs, and at most this many while a bound is not met.
ROUNDS, MAX_ROUNDS = 3, 6
#: Resident memory a pattern may add between its warm-up and its end.
BOUNDED_MIB = 64
#: Scales every count (1.0: the issue's 10,000 collectives and 100,000 events and kernels).
SCALE = float(os.environ.get("STRESS_SCALE", "1"))


def native_env(device: str) -> dict[str, str]:
    """The environment that runs this worker's ranks on ``device``'s native c10d backend."""
    from torch_backend.distributed import native_backend_name

    return {"TORCH_BACKEND_TEST_DIST_BACKEND": native_backend_name(device)}


def resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def timed(call: Callable[[], None], count: int, chunks: int = 1) -> tuple[float, list[float]]:
    """Seconds per call of ``count`` calls with no host synchronisation between them, the closing one included,
    and the host's seconds per call of each of ``chunks`` equal parts of them (enqueueing only)."""
    dev.synchronize()
    per_chunk = max(1, count // chunks)
    start = marks = time.perf_counter()
    parts = []
    for index in range(count):
        call()
        if (index + 1) % per_chunk == 0:
            now = time.perf_counter()
            parts.append((now - marks) / per_chunk)
            marks = now
    dev.synchronize()
    return (time.perf_counter() - start) / count, parts


def stress(name: str, call: Callable[[], None], small: int, large: int) -> dict:
    """Measures ``call`` issued ``large`` times between two host synchronisations, in rounds (at least ROUNDS,
    up to MAX_ROUNDS while a bound is not met; each figure is the least of the rounds': timings on a shared
    machine only ever come out slower):

    - flat: the host's cost per call over the last tenth of the large run against the first tenth (the
      medians of ten parts each), at most FLAT;
    - whole: the large run's cost per call, its closing synchronisation included, against the cost with a
      synchronisation every ``small`` calls (``large / small`` such runs: as many calls), at most WHOLE;
    - bounded: the resident memory all of it added, under BOUNDED_MIB.

    Makes ``small + rounds * 2 * large`` calls (``rounds`` is in the figures). Raises if a bound was not met."""
    large = max(small, int(large * SCALE))
    timed(call, small)  # warm-up: communicators, caches, the allocator's first blocks
    before = resident_mib()
    rounds: list[tuple[float, float, float]] = []  # (late / early, whole per call, per call synchronised often)

    def another_round() -> bool:
        """Whether any rank still misses a bound: every rank must run as many rounds, or their collectives
        part (a rank one round ahead waits for peers that finished: the group's timeout)."""
        if len(rounds) < ROUNDS:
            return True
        if len(rounds) >= MAX_ROUNDS:
            return False
        met = min(r[0] for r in rounds) <= FLAT and min(r[1] for r in rounds) <= WHOLE * min(r[2] for r in rounds)
        missed = torch.tensor([0 if met else 1])
        dist.all_reduce(missed, op=dist.ReduceOp.MAX)  # a CPU tensor: the group's CPU backend
        return bool(missed.item())

    while another_round():
        often = statistics.mean(timed(call, small)[0] for _ in range(large // small))
        whole, parts = timed(call, large, chunks=100)
        rounds.append((statistics.median(parts[-10:]) / statistics.median(parts[:10]), whole, often))
    late_over_early = min(r[0] for r in rounds)
    at_large, at_small = min(r[1] for r in rounds), min(r[2] for r in rounds)
    grown = resident_mib() - before
    figures = {
        "pattern": name,
        "small": small,
        "large": large,
        "late_over_early": round(late_over_early, 3),
        "us_per_call_small": round(at_small * 1e6, 2),
        "us_per_call_large": round(at_large * 1e6, 2),
        "ratio": round(at_large / at_small, 3),
        "rss_growth_mib": round(grown, 1),
        "rounds": len(rounds),
    }
    print("STRESS " + json.dumps(figures), flush=True)
    if late_over_early > FLAT:
        raise AssertionError(
            f"{name}: the host's cost per call grew {late_over_early:.2f}x over {large} calls: {figures}"
        )
    if at_large > WHOLE * at_small:
        raise AssertionError(f"{name}: {large} calls cost {figures['ratio']}x per call what {small} cost: {figures}")
    if grown >= BOUNDED_MIB:
        raise AssertionError(f"{name}: {large} calls grew the rank's memory by {grown:.0f} MiB: {figures}")
    return figures


def scenario_collectives(rank: int, world: int) -> None:
    """10,000 synchronous all_reduce calls between two host synchronisations; 10,000 async ones, each waited;
    1,000 rounds of all_gather, reduce_scatter, broadcast and a batched send/receive pair, interleaved."""
    device = torch.device(DEVICE, rank % dev.device_count())
    dev.set_device(device)
    # MAX keeps the value (every rank ends with world - 1) however many calls ran; the SUMs below check that
    # every call reduced.
    peak = torch.full((4,), float(rank), device=device)
    stress("all_reduce", lambda: dist.all_reduce(peak, op=dist.ReduceOp.MAX), 100, 10_000)
    waited = lambda: dist.all_reduce(peak, op=dist.ReduceOp.MAX, async_op=True).wait()  # noqa: E731
    stress("all_reduce async + wait", waited, 100, 10_000)
    torch.testing.assert_close(peak.cpu(), torch.full((4,), float(world - 1)))

    counter = torch.zeros(4, device=device)
    one = torch.ones(4, device=device)

    def count() -> None:  # a sum over ranks of 1 per call, added up
        total = one.clone()
        dist.all_reduce(total)
        counter.add_(total)

    calls = int(1_000 * SCALE)
    rounds = stress("all_reduce + add", count, 10, calls)["rounds"]
    made = 10 + rounds * 2 * calls  # stress()'s calls
    torch.testing.assert_close(counter.cpu(), torch.full((4,), float(world * made)))

    chunk = torch.full((8,), float(rank), device=device)
    gathered = torch.empty(8 * world, device=device)
    scattered = torch.empty(8, device=device)
    source = torch.arange(8 * world, dtype=torch.float32, device=device)
    root = torch.empty(8, device=device)
    sent, received = torch.full((8,), float(rank), device=device), torch.empty(8, device=device)
    peer = (rank + 1) % world, (rank - 1) % world

    def mixed() -> None:
        all_gather_single(gathered, chunk)
        reduce_scatter_single(scattered, source)
        root.fill_(float(rank))
        dist.broadcast(root, src=0)
        ops = [dist.P2POp(dist.isend, sent, peer[0]), dist.P2POp(dist.irecv, received, peer[1])]
        for work in dist.batch_isend_irecv(ops):
            work.wait()

    stress("all_gather + reduce_scatter + broadcast + send/recv", mixed, 10, calls)
    torch.testing.assert_close(gathered.cpu(), torch.arange(world).float().repeat_interleave(8))
    torch.testing.assert_close(scattered.cpu(), world * torch.arange(8 * rank, 8 * rank + 8).float())
    torch.testing.assert_close(root.cpu(), torch.zeros(8))
    torch.testing.assert_close(received.cpu(), torch.full((8,), float(peer[1])))


def scenario_streams(rank: int, world: int) -> None:
    """100,000 event record/wait pairs across two streams, each stream waiting for a collective, and 100,000
    small kernels, none synchronised."""
    device = torch.device(DEVICE, rank % dev.device_count())
    dev.set_device(device)
    x = torch.ones(4, device=device)
    dist.all_reduce(x)  # the streams now wait for collectives: the bookkeeping of failures is live
    first, second = dev.Stream(), dev.Stream()
    event = dev.Event()

    def ping_pong() -> None:
        event.record(first)
        second.wait_event(event)
        event.record(second)
        first.wait_event(event)

    with dev.stream(first):
        dist.all_reduce(x)
    stress("event record/wait pairs, two streams", ping_pong, 1_000, 50_000)
    y = torch.zeros(16, device=device)
    rounds = stress("small kernels (add_)", lambda: y.add_(1.0), 1_000, 100_000)["rounds"]
    torch.testing.assert_close(x.cpu(), torch.full((4,), float(world * world)))
    calls = 1_000 + rounds * 2 * max(1_000, int(100_000 * SCALE))  # stress()'s calls
    torch.testing.assert_close(y.cpu(), torch.full((16,), float(calls)))


def scenario_fsdp_deep(rank: int, world: int) -> None:
    """FSDP2 over a 48-layer model (each layer sharded: hundreds of collectives a step), 3 steps equal to one
    process training on the whole batches on the CPU."""
    from torch.distributed.fsdp import fully_shard

    device = torch.device(DEVICE, rank % dev.device_count())
    dev.set_device(device)
    width, layers, per_rank = 16, 48, 2
    torch.manual_seed(0)

    def make() -> torch.nn.Sequential:
        blocks = [torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.Tanh()) for _ in range(layers)]
        return torch.nn.Sequential(*blocks)

    model, reference = make(), make()
    reference.load_state_dict(model.state_dict())
    model.to(device)
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, reference)]
    generator = torch.Generator().manual_seed(1)
    for step in range(3):
        x = torch.randn(world * per_rank, width, generator=generator)
        rows = slice(rank * per_rank, (rank + 1) * per_rank)
        losses = [model(x[rows].to(device)).pow(2).mean(), reference(x).pow(2).mean()]
        for optimizer, loss in zip(optimizers, losses, strict=True):
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"step {step}: local loss {losses[0].item():.6f}", flush=True)
    for name, expected in reference.state_dict().items():
        got = model.state_dict()[name].full_tensor().cpu()
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6, msg=lambda m, name=name: f"{name}: {m}")


SCENARIOS = {name.removeprefix("scenario_"): f for name, f in globals().items() if name.startswith("scenario_")}


def main() -> None:
    scenario, port, rank, world = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    join(port, rank, world, float(os.environ.get("DIST_TEST_TIMEOUT_S", "120")))
    SCENARIOS[scenario](rank, world)
    dist.destroy_process_group()
    print(f"rank {rank}: {scenario} ok", flush=True)


if __name__ == "__main__":
    main()
