"""npu's collectives: HCCL through core's native c10d backend ("npuccl"), against the ACL emulator's
libhccl.so (no Ascend hardware here).

Every operation, DDP, FSDP2, subgroups, stalled and dead peers run in core's conformance kit
(its distributed suite, which `nox -s tests-npu` runs). Here: what is HCCL's own, an asynchronous
error in a rank's HCCL task (the emulator's ACL_EMULATOR_FAIL), which must fail every rank's read of the
collective's output with an error naming the collective and HCCL's reason, and each rank's exit status.
"""

from __future__ import annotations

import os

import pytest

from torch_backend.testing import run_ranks as start_ranks

pytestmark = pytest.mark.skipif(
    os.environ.get("TORCH_BACKEND") != "npu", reason="runs against npu (nox -s tests-npu sets TORCH_BACKEND=npu)"
)

WORKER = """
import sys, time
from datetime import timedelta
import torch, torch.distributed as dist

port, rank, world = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
timeout = timedelta(seconds=30)
store = dist.TCPStore("127.0.0.1", port, world, is_master=False, timeout=timeout)
dist.init_process_group(store=store, rank=rank, world_size=world, timeout=timeout)
assert "npu:npuccl" in dist.get_backend_config(), dist.get_backend_config()
device = torch.device("npu", rank % torch.npu.device_count())
torch.npu.set_device(device)
t = torch.ones(4, device=device)
start = time.monotonic()
expected, stage = t.cpu(), "all_reduce"
try:
    for _ in range(20):
        stage = "all_reduce"
        dist.all_reduce(t, async_op=True).wait()  # returns at once: a failure comes later
        stage = "read"
        values = t.cpu()  # a failed collective's output: this must raise
        expected = expected * world
        assert torch.equal(values, expected), f"a stale output was read: {values} (the sum is {expected})"
except Exception as error:
    print(f"ERROR after {time.monotonic() - start:.1f}s in {stage}: {type(error).__name__}: {error}", flush=True)
    sys.exit(3)
print("no error", flush=True)
"""


def run_ranks(world: int, failing_rank_env: dict[str, str]) -> list[tuple[int, str]]:
    """The ranks' (exit status, output); the last rank's environment gains ``failing_rank_env``."""
    return start_ranks(
        ["-c", WORKER], world, rank_env=lambda rank: failing_rank_env if rank == world - 1 else {}, label="HCCL ranks"
    )


def test_ranks_without_faults_run_every_collective_on_hccl() -> None:
    for rank, (code, out) in enumerate(run_ranks(2, {})):
        assert code == 0 and "no error" in out, f"rank {rank} exited {code}:\n{out}"


@pytest.mark.parametrize("world", [2, 3])
def test_an_asynchronous_hccl_error_fails_every_rank_at_once(world: int) -> None:
    # The last rank's third HcclAllReduce task fails on its stream, as a link error would.
    results = run_ranks(world, {"ACL_EMULATOR_FAIL": "HcclAllReduce:3"})
    for rank, (code, out) in enumerate(results):
        assert code == 3, f"rank {rank} exited {code}:\n{out}"
        line = next(line for line in out.splitlines() if line.startswith("ERROR after"))
        assert " in read: DistBackendError" in line, line  # reading the output failed, never read stale
        seconds = float(line.split("after ")[1].split("s in ")[0])
        assert "npuccl all_reduce" in line and seconds < 10, line
        if rank == world - 1:
            assert "internal error (an injected fault: ACL_EMULATOR_FAIL)" in line, line
        else:  # the peers learn of it from the interconnect, or from the failed rank's abort
            assert "a peer rank's communicator failed" in line or "destroyed" in line, line
