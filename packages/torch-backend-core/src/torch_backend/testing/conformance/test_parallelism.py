"""Multi-dimensional parallelism on the native c10d backend, 4 real processes: a (2, 2) device mesh
with tensor parallelism and FSDP2 (also with bfloat16 mixed precision), a distributed checkpoint
saved from that layout and loaded into a 1-D FSDP2 one, and a 4-stage GPipe pipeline. Each is
compared with the same code on CPU tensors (Gloo) in the same processes (parallel_worker.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch.distributed as dist

from torch_backend.distributed import native_backend_name
from torch_backend.testing import run_ranks
from torch_backend.testing.conformance._support import DEVICE

WORKER = Path(__file__).parent / "parallel_worker.py"
NATIVE = native_backend_name(DEVICE)

pytestmark = pytest.mark.skipif(
    NATIVE not in dist.Backend.backend_list,
    reason=f"{DEVICE}'s device library exports no collectives (DeviceCollectives.h)",
)


@pytest.mark.parametrize("scenario", ["mesh_2d", "checkpoint", "pipeline"])
def test_four_ranks_match_the_cpu(scenario: str, tmp_path: Path):
    env = {"TORCH_BACKEND_TEST_DIST_BACKEND": NATIVE, "PARALLEL_TEST_DIR": str(tmp_path)}
    results = run_ranks([str(WORKER), scenario], 4, env=env, limit_s=300, label=scenario)
    for rank, (code, out) in enumerate(results):
        assert code == 0, f"rank {rank} exited {code}:\n{out}"
        assert f"rank {rank}: {scenario} ok" in out, out
