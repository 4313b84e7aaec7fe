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

from torch_backend.testing import failed_read
from torch_backend.testing import run_ranks as start_ranks

pytestmark = pytest.mark.skipif(
    os.environ.get("TORCH_BACKEND") != "npu", reason="runs against npu (nox -s tests-npu sets TORCH_BACKEND=npu)"
)

WORKER = """
import sys
from datetime import timedelta
import torch, torch.distributed as dist
from torch_backend.testing import all_reduce_until_failure

port, rank, world = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
timeout = timedelta(seconds=30)
store = dist.TCPStore("127.0.0.1", port, world, is_master=False, timeout=timeout)
dist.init_process_group(store=store, rank=rank, world_size=world, timeout=timeout)
assert "npu:npuccl" in dist.get_backend_config(), dist.get_backend_config()
device = torch.device("npu", rank % torch.npu.device_count())
torch.npu.set_device(device)
all_reduce_until_failure(torch.ones(4, device=device))  # exits 3 at an error
"""


def run_ranks(world: int, failing_rank_env: dict[str, str]) -> list[tuple[int, str]]:
    """The ranks' (exit status, output); the last rank's environment gains ``failing_rank_env``."""
    # Flight-recorder dumps off on every rank: a process's first dump takes seconds, and the tests time failures.
    return start_ranks(
        ["-c", WORKER],
        world,
        env={"TORCH_FR_DUMP_ON_TIMEOUT": "0"},
        rank_env=lambda rank: failing_rank_env if rank == world - 1 else {},
        label="HCCL ranks",
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
        seconds, line = failed_read(out)  # reading the output failed, never read stale
        assert "npuccl all_reduce" in line and seconds < 10, line
        if rank == world - 1:
            assert "internal error (an injected fault: ACL_EMULATOR_FAIL)" in line, line
        else:  # the peers learn of it from the interconnect, or from the failed rank's abort
            assert "a peer rank's communicator failed" in line or "destroyed" in line, line


DTYPE_WORKER = """
import sys
from datetime import timedelta
import torch, torch.distributed as dist

port, rank, world = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
store = dist.TCPStore("127.0.0.1", port, world, is_master=False, timeout=timedelta(seconds=30))
dist.init_process_group(store=store, rank=rank, world_size=world, timeout=timedelta(seconds=30))
device = torch.device("npu", rank % torch.npu.device_count())
torch.npu.set_device(device)

ATEN_NAMES = {torch.float64: "Double", torch.uint8: "Byte", torch.int16: "Short", torch.bfloat16: "BFloat16"}

def refused(call, dtype, op):
    try:
        call()
    except (TypeError, RuntimeError) as error:  # c10d's bindings raise C++ TypeErrors as RuntimeError
        message = str(error)
        assert "HCCL has no" in message and ATEN_NAMES[dtype] in message and op in message, error
        return
    raise AssertionError(f"{dtype} {op} was not refused")

# HCCL reduces no float64 and no uint8, and has no product of int16 or bfloat16: a TypeError naming them,
# raised before anything is enqueued, and the group stays usable.
for dtype, op in [(torch.float64, dist.ReduceOp.SUM), (torch.uint8, dist.ReduceOp.MAX),
                  (torch.int16, dist.ReduceOp.PRODUCT), (torch.bfloat16, dist.ReduceOp.PRODUCT),
                  (torch.float64, dist.ReduceOp.AVG)]:
    t = torch.ones(4, dtype=dtype, device=device)
    name = str(op).split(".")[-1]
    refused(lambda: dist.all_reduce(t, op=op), t.dtype, name)
    refused(lambda: dist.reduce(t, dst=0, op=op), t.dtype, name)
    out = torch.empty(2, dtype=dtype, device=device)
    refused(lambda: dist.reduce_scatter_tensor(out, torch.ones(2 * world, dtype=dtype, device=device), op=op),
            t.dtype, name)
# What HCCL reduces works, bool through int8; float64 and uint8 move (broadcast, all_gather) as bytes.
for dtype, op, expected in [(torch.bool, dist.ReduceOp.SUM, True), (torch.int16, dist.ReduceOp.SUM, world),
                            (torch.bfloat16, dist.ReduceOp.MAX, 1), (torch.int64, dist.ReduceOp.PRODUCT, 1)]:
    t = torch.ones(4, dtype=dtype, device=device)
    dist.all_reduce(t, op=op)
    assert torch.equal(t.cpu(), torch.full((4,), expected, dtype=dtype)), (dtype, t)
for dtype in (torch.float64, torch.uint8):
    t = torch.full((3,), rank + 1, dtype=dtype, device=device)
    dist.broadcast(t, src=0)
    assert torch.equal(t.cpu(), torch.ones(3, dtype=dtype)), t
    gathered = torch.empty(3 * world, dtype=dtype, device=device)
    dist.all_gather_into_tensor(gathered, torch.full((3,), rank + 1, dtype=dtype, device=device))
    assert torch.equal(gathered.cpu(), torch.arange(1, world + 1, dtype=dtype).repeat_interleave(3)), gathered
dist.destroy_process_group()
print("dtype limits ok", flush=True)
"""


def test_hccl_dtype_limits_are_clear_errors_and_the_rest_runs() -> None:
    results = start_ranks(["-c", DTYPE_WORKER], 2, label="HCCL dtype ranks")
    for rank, (code, out) in enumerate(results):
        assert code == 0 and "dtype limits ok" in out, f"rank {rank} exited {code}:\n{out}"
