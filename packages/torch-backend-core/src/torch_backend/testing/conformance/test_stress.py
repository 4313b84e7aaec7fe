"""Stress: 100 times the operations a unit test needs, on the native c10d backend, with no host
synchronisation between them. Each pattern's host cost per operation late in the large run stays within
1.5x of its cost early in it, the whole run's cost per operation within 3x of the cost with a
synchronisation every few operations, and the rank's resident memory grows by less than 64 MiB
(stress_worker.py measures and asserts them, and prints its figures as ``STRESS`` lines); every rank's
exit status and values are checked.

Issue 68: 20 synchronous all_reduce calls between two synchronisations cost 13 ms each, 750 got a rank
killed for memory, because each stream's pending dependencies were copied into every event and every
waiting stream.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch.distributed as dist

from torch_backend.distributed import native_backend_name
from torch_backend.testing import run_ranks
from torch_backend.testing.conformance._support import DEVICE

WORKER = Path(__file__).parent / "stress_worker.py"
NATIVE = native_backend_name(DEVICE)
ON_NATIVE = {"TORCH_BACKEND_TEST_DIST_BACKEND": NATIVE}
#: The flight recorder on, with its default ring of 2,000 entries (its memory is bounded by the ring, not by
#: the calls; 0 turns it off).
RECORDING = {"TORCH_FR_BUFFER_SIZE": "2000"}

pytestmark = pytest.mark.skipif(
    NATIVE not in dist.Backend.backend_list,
    reason=f"{DEVICE}'s device library exports no collectives (DeviceCollectives.h)",
)


def figures(results: list[tuple[int, str]]) -> list[dict]:
    """Every rank's STRESS lines, each exit status asserted (the worker asserts the bounds)."""
    found = []
    for rank, (code, out) in enumerate(results):
        assert code == 0, f"rank {rank} exited {code}:\n{out}"
        lines = [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("STRESS ")]
        found += [json.loads(line) | {"rank": rank} for line in lines]
    for row in found:  # the figures, in the log (pytest -s, or -rP)
        print(json.dumps(row))
    return found


@pytest.mark.parametrize("recorder", ["off", "on"])
def test_collectives_stay_flat_between_host_synchronisations(recorder: str):
    env = ON_NATIVE | (RECORDING if recorder == "on" else {"TORCH_FR_BUFFER_SIZE": "0"})
    found = figures(run_ranks([str(WORKER), "collectives"], 2, env=env, limit_s=600, label="collectives"))
    patterns = {row["pattern"] for row in found}
    assert len(found) == 2 * 4 and len(patterns) == 4, found
    assert all(row["large"] >= 100 * row["small"] or row["large"] >= 1000 for row in found), found


def test_events_and_kernels_stay_flat_without_synchronisation():
    found = figures(run_ranks([str(WORKER), "streams"], 2, env=ON_NATIVE, limit_s=600, label="streams"))
    assert len(found) == 2 * 2, found


def test_fsdp2_over_48_layers_matches_one_process():
    results = run_ranks([str(WORKER), "fsdp_deep"], 4, env=ON_NATIVE, limit_s=600, label="fsdp_deep")
    for rank, (code, out) in enumerate(results):
        assert code == 0, f"rank {rank} exited {code}:\n{out}"
        assert f"rank {rank}: fsdp_deep ok" in out, out
