"""Faults in fake's collective library reach torch.distributed on the native backend ("fakeccl") as
errors naming the collective, within the group's timeout, and every rank exits with a status the
test checks: an asynchronous error on one rank, a rank whose collective hangs.

The ranks are subprocesses joined through a TCP store this process serves.
"""

from __future__ import annotations

from torch_backend.testing import failed_read
from torch_backend.testing import run_ranks as start_ranks

WORKER = """
import os, sys, time
from datetime import timedelta
import torch, torch.distributed as dist
import torch_backend_fake.faults as faults
from torch_backend.testing import all_reduce_until_failure

fault, port, rank, world = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
timeout = timedelta(seconds=float(os.environ["DIST_TEST_TIMEOUT_S"]))
store = dist.TCPStore("127.0.0.1", port, world, is_master=False, timeout=timeout)
dist.init_process_group("fakeccl", store=store, rank=rank, world_size=world, timeout=timeout)
device = torch.device("fake", rank % torch.fake.device_count())
torch.fake.set_device(device)
t = torch.ones(4, device=device)
dist.all_reduce(t)
torch.fake.synchronize()
# Every rank has its warm-up result before the fault is injected (through the store, outside the
# collectives): otherwise the faulty rank may abort the group while a peer still waits for the warm-up,
# which then fails outside all_reduce_until_failure.
store.add("warmed up", 1)
while store.add("warmed up", 0) < world:
    time.sleep(0.01)
if rank == world - 1:
    faults.inject(fault, nth=1)
all_reduce_until_failure(t)  # exits 3 at the error
sys.exit(1)
"""


def run_ranks(fault: str, world: int, timeout_s: float, worker: str = WORKER, **settings: str) -> list[tuple[int, str]]:
    finished.clear()
    env = {"DIST_TEST_TIMEOUT_S": str(timeout_s), **settings}  # the kit's name: one fork server serves every timeout
    return start_ranks(["-c", worker, fault], world, env=env, exit_times=finished, label=fault)


#: Seconds from the start of the last run_ranks until each rank (in rank order) had exited.
finished: list[float] = []


def errors(results: list[tuple[int, str]]) -> list[tuple[float, str]]:
    """(seconds, error line) of every rank, each of which must have failed reading the collective's output
    (never the stale input) and exited 3 through the interpreter's ordinary exit."""
    found = []
    for rank, (code, out) in enumerate(results):
        assert code == 3, f"rank {rank} exited {code}:\n{out}"
        found.append(failed_read(out))
    return found


# A failing group first writes the flight recorder's dumps, and a process's first dump with Python stacks
# takes seconds: the tests that time the failure turn dumps off (the kit's flight-recorder test times them).
NO_DUMPS = {"TORCH_FR_DUMP_ON_TIMEOUT": "0"}


def test_an_asynchronous_error_on_one_rank_fails_every_rank_at_once():
    for seconds, line in errors(run_ranks("collective", 3, timeout_s=60, **NO_DUMPS)):
        assert "fakeccl all_reduce" in line and seconds < 10, line
        assert "injected fault" in line or "peer rank's communicator failed" in line, line


def test_a_hung_rank_fails_every_rank_within_the_timeout():
    timeout_s = 3
    for seconds, line in errors(run_ranks("collective_hang", 2, timeout_s=timeout_s, **NO_DUMPS)):
        assert "timed out" in line or "peer rank's communicator failed" in line, line
        assert seconds <= timeout_s + 2, line


def test_the_abort_setting_ends_every_rank_instead():
    results = run_ranks("collective_hang", 2, timeout_s=3, TORCH_BACKEND_DIST_ERROR_HANDLING="abort")
    for rank, (code, out) in enumerate(results):
        assert code == 1, f"rank {rank} exited {code}:\n{out}"
        assert "Ending the process (TORCH_BACKEND_DIST_ERROR_HANDLING=abort)" in out, out
        assert "timed out" in out or "peer rank's" in out, out


def test_an_invalid_error_handling_setting_is_a_clear_error():
    results = run_ranks("collective", 1, timeout_s=3, TORCH_BACKEND_DIST_ERROR_HANDLING="sometimes")
    code, out = results[0]
    assert code != 0 and "TORCH_BACKEND_DIST_ERROR_HANDLING must be 'raise' or 'abort', got 'sometimes'" in out, out


EXIT_WORKER = """
import os, sys, time
from datetime import timedelta
import torch, torch.distributed as dist

peer, port, rank, world = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
timeout = timedelta(seconds=float(os.environ["DIST_TEST_TIMEOUT_S"]))
store = dist.TCPStore("127.0.0.1", port, world, is_master=False, timeout=timeout)
dist.init_process_group("fakeccl", store=store, rank=rank, world_size=world, timeout=timeout)
t = torch.ones(1 << 20, device="fake")
dist.all_reduce(t)
torch.fake.synchronize()
if rank == 1 and peer == "hung":
    time.sleep(4 * timeout.total_seconds() + 6)  # alive, never taking part again, past the bound rank 0 is held to
    os._exit(17)
start = time.monotonic()
dist.all_reduce(t, async_op=True)  # left running: no wait, no destroy_process_group
print(f"exiting after {time.monotonic() - start:.1f}s", flush=True)
"""


def test_exit_with_collectives_still_running_waits_for_them_and_keeps_the_status():
    for rank, (code, out) in enumerate(run_ranks("well", 2, timeout_s=30, worker=EXIT_WORKER)):
        assert code == 0, f"rank {rank} exited {code}:\n{out}"


def test_exit_with_a_collective_of_a_hung_peer_ends_after_the_timeout():
    timeout_s = 3
    results = run_ranks("hung", 2, timeout_s=timeout_s, worker=EXIT_WORKER)
    code, out = results[0]
    assert code == 0, out  # the script's own status: its collective failed at exit, after it ended
    assert results[1][0] == 17, results[1][1]
    # Rank 0 left within the timeout (plus start-up), long before its hung peer did.
    assert finished[0] < 4 * timeout_s + 5 < finished[1], finished
