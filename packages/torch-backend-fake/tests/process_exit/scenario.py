"""One way for a process that used the device to end; test_process_exit.py runs each many times.

    python scenario.py NAME [ARG]

Every scenario ends the way its script says (its own exit status), and the
test checks exactly that status. Device work is deliberately left in flight.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta

import torch

DEVICE = os.environ.get("EXIT_SCENARIO_DEVICE") or torch._C._get_privateuse1_backend_name()


def train_steps(steps: int, device: str = DEVICE) -> torch.nn.Module:
    """SGD on a small MLP, ending with an optimizer step and no synchronisation.

    This shape made 8% of exits abort before core's exit barrier (the autograd
    device thread still dropping the last graph task); with AdamW the longer
    step hides the race.
    """
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(16, 32, device=device)
    y = torch.randn(16, 8, device=device)
    for _ in range(steps):
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
    return model


def train(status: str = "0") -> None:
    """Exit with `status` straight after training, the autograd device thread possibly still busy."""
    train_steps(5)
    sys.exit(int(status))


def queued() -> None:
    """Exit with work queued on a non-default stream, events recorded, a pinned copy pending."""
    module = getattr(torch, DEVICE)
    x = torch.randn(1 << 16, device=DEVICE)
    pinned = torch.empty(1 << 16, pin_memory=True)
    stream = module.Stream()
    with module.stream(stream):
        module._sleep(50_000)
        y = (x * 2).sin()
        pinned.copy_(y, non_blocking=True)
        done = module.Event(enable_timing=True)
        done.record()
    stream.wait_event(done)
    sys.exit(0)


def _ddp_rank(rank: int, world: int, init_method: str) -> None:
    device = torch.device(DEVICE, rank)
    torch.distributed.init_process_group(
        init_method=init_method, rank=rank, world_size=world, timeout=timedelta(seconds=60), device_id=device
    )
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 4).to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 16, device=device)
    for _ in range(5):
        optimizer.zero_grad()
        model(x).square().mean().backward()
        optimizer.step()
    torch.distributed.destroy_process_group()


def ddp(port: str) -> None:
    """Two DDP ranks under torch.multiprocessing.spawn; spawn raises if a rank dies by a signal."""
    world = 2
    torch.multiprocessing.spawn(_ddp_rank, args=(world, f"tcp://127.0.0.1:{port}"), nprocs=world)
    sys.exit(0)


def forked() -> None:
    """A child forked after the device was used cannot use it (RuntimeError) and exits with its own status."""
    train_steps(3)
    pid = os.fork()
    if pid == 0:
        try:
            torch.ones(1, device=DEVICE)
        except RuntimeError as error:
            sys.exit(5 if "forked subprocess" in str(error) else 6)
        sys.exit(7)
    _, status = os.waitpid(pid, 0)
    sys.exit(0 if os.waitstatus_to_exitcode(status) == 5 else 1)


def interrupted() -> None:
    """KeyboardInterrupt mid-training, right after a backward (its device thread still busy).

    Raised by the script itself: delivering SIGINT from outside hung plain
    CPU-only PyTorch twice in CI on this machine kind (no backend active), so
    the signal's timing is not what this checks; the exit path after an
    uncaught KeyboardInterrupt is.
    """
    model = train_steps(3)
    x = torch.randn(16, 32, device=DEVICE)
    model(x).sum().backward()
    raise KeyboardInterrupt


if __name__ == "__main__":
    globals()[sys.argv[1]](*sys.argv[2:])
