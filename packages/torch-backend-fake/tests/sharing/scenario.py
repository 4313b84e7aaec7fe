"""Device tensors between processes, run by test_multiprocessing.py: `python scenario.py CASE`.

Prints one line per finding; every process it starts must exit 0 within its time limit.
"""

from __future__ import annotations

import sys

import torch
import torch.multiprocessing as mp

LIMIT = 60  # seconds any wait may take: a hang is a failure, not a stall


def consumer(tensors: mp.Queue, results: mp.Queue) -> None:
    try:
        received = tensors.get(timeout=LIMIT)
        results.put(("received", str(received.device), received.stride(), received.cpu().tolist()))
        received.mul_(2)  # the same memory: the producer sees this
        parameter = tensors.get(timeout=LIMIT)
        results.put(("parameter", type(parameter).__name__, parameter.requires_grad, parameter.cpu().tolist()))
        cpu = tensors.get(timeout=LIMIT)
        results.put(("cpu", str(cpu.device), cpu.tolist()))
    except Exception as error:  # reported, not raised: the producer checks it
        results.put(("error", type(error).__name__, str(error)))


def spawned(rank: int, weight: torch.Tensor, results: mp.Queue) -> None:
    results.put(("spawned", rank, str(weight.device), weight.cpu().tolist()))


def main(case: str) -> None:
    context = mp.get_context("spawn")
    tensors, results = context.Queue(), context.Queue()
    if case == "queue":
        base = torch.arange(10.0, device="fake")
        view = base[2:8].reshape(2, 3).t()  # a strided view into a larger storage
        worker = context.Process(target=consumer, args=(tensors, results))
        worker.start()
        tensors.put(view)
        print(results.get(timeout=LIMIT))
        tensors.put(torch.nn.Parameter(torch.ones(3, device="fake")))
        print(results.get(timeout=LIMIT))
        tensors.put(torch.full((2,), 5.0))
        print(results.get(timeout=LIMIT))
        worker.join(LIMIT)
        print("consumer exit", worker.exitcode)
        print("producer sees", base.tolist())
    elif case == "spawn":
        weight = torch.arange(4.0, device="fake:1")
        mp.spawn(spawned, args=(weight, results), nprocs=2, join=True)
        print(sorted([results.get(timeout=LIMIT), results.get(timeout=LIMIT)]))
    elif case == "unshareable":
        worker = context.Process(target=consumer, args=(tensors, results))
        worker.start()
        tensors.put(torch.ones(3, device="fake"))
        print(results.get(timeout=LIMIT))
        worker.join(LIMIT)
        print("consumer exit", worker.exitcode)
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
