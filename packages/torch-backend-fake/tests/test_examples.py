"""Every script in examples/, run on fake as its docstring says to run it: each checks its own result
and exits non-zero when it does not hold, so the exit status is what is asserted (and its last line).

tests-fake runs them once (host memory); tests-fake-discrete leaves this file out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[3] / "examples"
FAKE = {"TORCH_BACKEND": "fake", "TORCH_BACKEND_FAKE_DISCRETE": "0"}


def run(args: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, *args], env=os.environ | FAKE | env, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def torchrun(example: str, processes: int) -> list[str]:
    return ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(processes), str(EXAMPLES / example)]


def test_ddp_example_under_torchrun():
    """examples/ddp_train.py checks itself: equal ranks, equal to one process on the whole batches."""
    done = run(torchrun("ddp_train.py", 2), {}, timeout=240)
    # Both ranks report; their lines may interleave in the shared pipe.
    assert done.stdout.count("across ranks 0.00e+00") == 2, done.stdout


def test_two_dimensional_parallel_example_under_torchrun():
    done = run(torchrun("parallel_2d.py", 4), {}, timeout=300)
    assert done.stdout.count("equals one CPU process: ok") == 4, done.stdout


@pytest.mark.parametrize(
    ("example", "env"),
    [
        ("amp_train.py", {}),
        ("compile_train.py", {}),
        ("profile_step.py", {}),
        # Graph capture needs every op of the step on the device's kernels (the fallback cannot be captured).
        ("graphs_step.py", {"TORCH_BACKEND_FAKE_KERNELS": "1"}),
        ("demo_train.py", {}),
    ],
)
def test_single_process_example(example: str, env: dict[str, str]):
    done = run([str(EXAMPLES / example)], env, timeout=600)
    if example != "demo_train.py":
        assert done.stdout.rstrip().endswith(": ok"), done.stdout[-2000:]
