"""The c10d backends on device tensors, with 2 and 3 real processes: the staged Gloo backend, and
core's native one where the device library has collectives (DeviceCollectives.h).

Each test serves a TCP store on a free loopback port and starts the ranks as
subprocesses (distributed_worker.py), bounded in time.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from torch_backend._compat import flight_recorder_analyser_knows, split_group_serves_other_devices
from torch_backend.distributed import native_backend_name
from torch_backend.testing import run_ranks as start_ranks
from torch_backend.testing.conformance._support import DEVICE, needs_stream_sleep

WORKER = Path(__file__).parent / "distributed_worker.py"


def run_ranks(scenario: str, world: int, *, env: dict[str, str] | None = None, limit_s: float = 240.0):
    """Start `world` ranks of `scenario`; return [(returncode, output)] per rank."""
    return start_ranks([str(WORKER), scenario], world, env=env, limit_s=limit_s, label=scenario)


def assert_all_ok(results) -> None:
    for rank, (code, out) in enumerate(results):
        assert code == 0, f"rank {rank} exited {code}:\n{out}"


NATIVE = native_backend_name(DEVICE)
ON_NATIVE = {"TORCH_BACKEND_TEST_DIST_BACKEND": NATIVE}
needs_native = pytest.mark.skipif(
    NATIVE not in dist.Backend.backend_list,
    reason=f"{DEVICE}'s device library exports no collectives (DeviceCollectives.h)",
)


@needs_native
@pytest.mark.parametrize("world", [2, 3])
def test_every_operation_on_the_native_backend(world: int):
    assert_all_ok(run_ranks("ops", world, env=ON_NATIVE))


@needs_native
@needs_stream_sleep
def test_native_backend_orders_collectives_after_stream_work():
    assert_all_ok(run_ranks("ordering", 2, env=ON_NATIVE))


@needs_native
@pytest.mark.parametrize("scenario", ["ddp_timing", "ddp_profiled", "fsdp", "groups", "errors"])
def test_native_backend_trains_and_keeps_groups(scenario: str):
    assert_all_ok(run_ranks(scenario, 2, env=ON_NATIVE))


@needs_native
@pytest.mark.skipif(not split_group_serves_other_devices(), reason="split_group splits CUDA's backend only")
def test_native_backend_splits_groups():
    assert_all_ok(run_ranks("split", 3, env=ON_NATIVE))


# The failing rank's watchdog waits for its flight-recorder dump before it fails the collectives, and a
# process's first dump with Python stacks takes seconds (PyTorch imports torch._dynamo to symbolise them):
# the tests that time a failure turn dumps off (the flight-recorder test times them).
NO_DUMPS = {"TORCH_FR_DUMP_ON_TIMEOUT": "0"}


@needs_native
def test_dead_peer_fails_native_survivors_at_once():
    env = {**ON_NATIVE, **NO_DUMPS, "DIST_TEST_TIMEOUT_S": "30"}
    for seconds, line in survivor_errors(run_ranks("die", 3, env=env, limit_s=120)):
        assert "process exited" in line and seconds < 10, line


@needs_native
def test_stalled_peer_fails_native_survivors_within_the_timeout():
    timeout_s = 4
    env = {**ON_NATIVE, **NO_DUMPS, "DIST_TEST_TIMEOUT_S": str(timeout_s)}
    results = run_ranks("stall", 2, env=env, limit_s=120)
    for seconds, line in survivor_errors(results):
        assert "timed out" in line and "past the group's timeout of 4000 ms" in line, line
        assert timeout_s <= seconds <= timeout_s + 2, line


@needs_native
def test_dead_peer_fails_every_read_of_the_survivors_output():
    env = {**ON_NATIVE, "DIST_TEST_TIMEOUT_S": "20"}
    for seconds, line in survivor_errors(run_ranks("stale_die", 3, env=env, limit_s=120)):
        assert "all_reduce" in line and "process exited" in line and seconds < 20 + 30, line


@needs_native
@pytest.mark.parametrize("scenario", ["stale_stall", "stale_stall_p2p"])
def test_stalled_peer_fails_every_read_of_the_survivors_output(scenario: str):
    timeout_s = 4
    results = run_ranks(scenario, 2, env={**ON_NATIVE, **NO_DUMPS, "DIST_TEST_TIMEOUT_S": str(timeout_s)}, limit_s=120)
    op = "recv" if scenario.endswith("p2p") else "all_reduce"
    for seconds, line in survivor_errors(results):
        assert op in line and "timed out" in line and "rank 0 of 2" in line, line
        assert timeout_s <= seconds <= timeout_s + 30, line


@needs_native
def test_batched_cpu_point_to_point_waits_for_gloo():
    assert_all_ok(run_ranks("cpu_batched_p2p", 2, env=ON_NATIVE))


@needs_native
def test_flight_recorder_names_the_rank_that_never_arrived(tmp_path: Path):
    # Rank 1 of 4 skips the seventh all_reduce; every rank dumps its flight recorder, and PyTorch's
    # analyser, reading the dumps, names rank 1 as the one missing from that collective.
    timeout_s, prefix = 4, "trace_rank_"
    results = run_ranks("flight_recorder", 4, env=recording_env(tmp_path, prefix, timeout_s), limit_s=180)
    assert_all_ok(results)
    for rank, (_, out) in enumerate(results):
        dumped = next(line for line in out.splitlines() if line.startswith("DUMPED_AFTER"))
        assert float(dumped.split()[1].rstrip("s")) <= timeout_s + 30, out
        if rank != 1:
            failed = next(line for line in out.splitlines() if line.startswith("FAILED"))
            assert "all_reduce #7" in failed, failed
            # After the timeout and this rank's dump (bounded by TORCH_FR_WAIT_TIMEOUT_DUMP_MILSEC, 15 s).
            assert float(failed.split("after ")[1].split("s:")[0]) <= timeout_s + 15 + 2, failed
    assert_analyser_names_rank_1(tmp_path, prefix)


@needs_native
def test_flight_recorder_dumps_every_rank_before_the_error_ends_a_process(tmp_path: Path):
    # Issue 68: ranks that call os._exit the moment the error reaches them used to leave 2 dumps of 4 (the
    # library's error reached them before the group's dumps were written): now it reaches them after.
    timeout_s, prefix = 4, "trace_rank_"
    results = run_ranks("flight_recorder_exit", 4, env=recording_env(tmp_path, prefix, timeout_s), limit_s=180)
    assert_all_ok(results)
    dumps = sorted(path.name for path in tmp_path.glob(f"{prefix}*"))
    assert dumps == [f"{prefix}{rank}" for rank in range(4)], (dumps, results)
    assert_analyser_names_rank_1(tmp_path, prefix)


@needs_native
def test_flight_recorder_dumps_every_rank_under_torchrun(tmp_path: Path):
    # torchrun's default failure handling: the first rank that dies on the error makes the agent end the
    # others. They all dump first: the error reaches the script only after every rank's dump.
    timeout_s, prefix = 4, "trace_rank_"
    env = os.environ | {
        "TORCH_BACKEND": DEVICE,
        "DIST_TEST_TIMEOUT_S": str(timeout_s),
        "TORCH_FR_DUMP_TEMP_FILE": str(tmp_path / prefix),
        "TORCH_FR_DUMP_ON_TIMEOUT": "1",
    }
    worker = Path(__file__).parent / "torchrun_worker.py"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4", str(worker)]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    output = run.stdout + run.stderr
    assert run.returncode == 1, f"torchrun exited {run.returncode}:\n{output}"  # the ranks' failure, reported
    assert "all_reduce #7" in output, output
    dumps = sorted(path.name for path in tmp_path.glob(f"{prefix}*"))
    assert dumps == [f"{prefix}{rank}" for rank in range(4)], (dumps, output[-6000:])
    assert_analyser_names_rank_1(tmp_path, prefix)


def recording_env(tmp_path: Path, prefix: str, timeout_s: float) -> dict[str, str]:
    """The native backend, the group's timeout, and flight-recorder dumps into tmp_path/<prefix><rank>."""
    return {**ON_NATIVE, "DIST_TEST_TIMEOUT_S": str(timeout_s), "TORCH_FR_DUMP_TEMP_FILE": str(tmp_path / prefix)}


def assert_analyser_names_rank_1(tmp_path: Path, prefix: str) -> None:
    """PyTorch's flight-recorder analyser, reading the dumps, names rank 1 as missing from collective 7."""
    library = pickle.loads((tmp_path / f"{prefix}0").read_bytes())["entries"][-1]["profiling_name"].split(":")[0]
    if not flight_recorder_analyser_knows(library):
        pytest.skip(f"this torch's flight-recorder analyser does not read {library}'s ops (the dumps were written)")
    analysis = subprocess.run(
        [sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", str(tmp_path), "-p", prefix],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = analysis.stdout + analysis.stderr
    assert analysis.returncode == 0, report
    assert "Not all ranks joining collective, sequence number: 7" in report, report
    assert "missing ranks: {1}" in report, report


@needs_native
def test_flight_recorder_holds_every_op_with_its_group():
    assert_all_ok(run_ranks("recorded", 3, env=ON_NATIVE))


@needs_native
def test_native_backend_is_the_default_and_staged_gloo_stays_selectable():
    assert set(dist.Backend.backend_capability[NATIVE]) == {DEVICE, "cpu"}
    assert set(dist.Backend.backend_capability["staged_gloo"]) == {DEVICE, "cpu"}
    assert_all_ok(run_ranks("default_backend", 2, env={"TORCH_BACKEND_TEST_DIST_BACKEND": "default"}))


def test_registered_as_default_backend_of_the_device():
    default = NATIVE if NATIVE in dist.Backend.backend_list else "staged_gloo"
    assert dist.Backend.default_device_backend_map[DEVICE] == default
    assert set(dist.Backend.backend_capability["staged_gloo"]) == {DEVICE, "cpu"}


def test_torch_keeps_its_own_error_types_with_the_backend_loaded():
    # Core's Python modules must not translate torch's C++ errors for it: a process-wide pybind11
    # translator of ours once turned every c10 error raised through pybind11 (this DistNetworkError,
    # a failed NCCL-style Work.wait's DistBackendError) into a plain RuntimeError.
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(dist.DistNetworkError, match="timed out"):
        dist.TCPStore("127.0.0.1", port, 2, is_master=False, timeout=timedelta(milliseconds=300))


@pytest.mark.parametrize("staging", ["auto", "pinned"])
@pytest.mark.parametrize("world", [2, 3])
def test_every_operation(world: int, staging: str):
    assert_all_ok(run_ranks("ops", world, env={"TORCH_BACKEND_DIST_STAGING": staging}))


@needs_stream_sleep
@pytest.mark.parametrize("staging", ["auto", "pinned"])
def test_stream_ordering_and_async_work(staging: str):
    assert_all_ok(run_ranks("ordering", 2, env={"TORCH_BACKEND_DIST_STAGING": staging}))


def test_ddp_reports_device_times():
    assert_all_ok(run_ranks("ddp_timing", 2))


def test_fsdp2_matches_one_process():
    assert_all_ok(run_ranks("fsdp", 2))


def test_subgroups_and_object_collectives():
    assert_all_ok(run_ranks("groups", 3))


def test_bad_input_raises_and_group_survives():
    assert_all_ok(run_ranks("errors", 2))


def survivor_errors(results) -> list[tuple[float, str]]:
    """(seconds the failing collective took, error text) of every surviving rank."""
    assert results[-1][0] == 17, results[-1][1]
    errors = []
    for code, out in results[:-1]:
        assert code == 3, out
        line = next(line for line in out.splitlines() if line.startswith("SURVIVOR_ERROR"))
        seconds = float(line.split("after ")[1].split("s:")[0])
        errors.append((seconds, line))
    return errors


def test_dead_peer_fails_survivors_at_once():
    for seconds, line in survivor_errors(run_ranks("die", 3, env={"DIST_TEST_TIMEOUT_S": "30"}, limit_s=120)):
        assert "Connection closed by peer" in line and seconds < 30, line


def test_stalled_peer_fails_survivors_within_the_timeout():
    timeout_s = 4
    results = run_ranks("stall", 2, env={"DIST_TEST_TIMEOUT_S": str(timeout_s)}, limit_s=120)
    for seconds, line in survivor_errors(results):
        assert "Timed out" in line or "timeout" in line.lower(), line
        assert timeout_s * 0.5 <= seconds <= timeout_s * 2 + 2, line


def test_invalid_staging_mode_is_a_clear_error():
    from torch_backend.distributed import _create_backend

    os.environ["TORCH_BACKEND_DIST_STAGING"] = "sometimes"
    try:
        with pytest.raises(ValueError, match="TORCH_BACKEND_DIST_STAGING"):
            _create_backend(dist.HashStore(), 0, 1, timedelta(seconds=5))
    finally:
        del os.environ["TORCH_BACKEND_DIST_STAGING"]


def test_single_process_group_on_cpu_and_the_device():
    """World size 1 in this process: CPU tensors pass through, device tensors are staged."""
    store = dist.HashStore()
    dist.init_process_group("staged_gloo", store=store, rank=0, world_size=1)
    try:
        t = torch.arange(4.0, device=DEVICE)
        c = torch.arange(4.0)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        dist.all_reduce(c)
        torch.testing.assert_close(t.cpu(), torch.arange(4.0))
        torch.testing.assert_close(c, torch.arange(4.0))
        assert dist.get_backend() == "staged_gloo"
    finally:
        dist.destroy_process_group()


def test_results_reach_inference_tensors_and_parameters(monkeypatch: pytest.MonkeyPatch):
    """Pinned staging copies results back without autograd, also from Gloo's thread."""
    monkeypatch.setenv("TORCH_BACKEND_DIST_STAGING", "pinned")
    dist.init_process_group("staged_gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        with torch.inference_mode():
            frozen = torch.full((4,), 2.0, device=DEVICE)
        (value,) = dist.all_reduce(frozen, op=dist.ReduceOp.AVG, async_op=True).get_future().wait()
        torch.testing.assert_close(value.cpu(), torch.full((4,), 2.0))
        weight = torch.nn.Parameter(torch.full((3,), 5.0, device=DEVICE))
        dist.broadcast(weight, src=0)
        assert weight.requires_grad and weight.grad_fn is None
        torch.testing.assert_close(weight.detach().cpu(), torch.full((3,), 5.0))
    finally:
        dist.destroy_process_group()
