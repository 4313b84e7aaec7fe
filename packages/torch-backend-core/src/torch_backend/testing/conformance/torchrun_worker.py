"""One rank under torchrun: ``torchrun --standalone --nproc-per-node 4 torchrun_worker.py``.

The flight-recorder scenario as users meet it: rank 1 never issues the seventh all_reduce, and every
other rank dies on the error (an uncaught exception: exit status 1), whereupon torchrun's agent ends
the rest, rank 1 included. Every rank's dump must be on disk all the same (test_distributed.py reads
them). Run by test_distributed.py (its name keeps pytest from collecting it).
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from torch_backend.testing import device_module, device_type


def main() -> None:
    rank = int(os.environ["RANK"])
    timeout_s = float(os.environ["DIST_TEST_TIMEOUT_S"])
    dist.init_process_group(timeout=timedelta(seconds=timeout_s))  # env://, the device's default backend
    device = device_type()
    t = torch.ones(4, device=device)
    for _ in range(6):
        dist.all_reduce(t)
        device_module().synchronize()
    if rank == 1:
        time.sleep(timeout_s + 120)  # in host code until torchrun ends it
        return
    dist.all_reduce(t)
    device_module().synchronize()  # raises: the script dies here
    raise AssertionError("the seventh all_reduce did not fail")


if __name__ == "__main__":
    main()
