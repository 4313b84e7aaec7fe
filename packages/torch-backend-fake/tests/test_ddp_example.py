"""examples/ddp_train.py, as its docstring says to run it, on fake (DDP over the staged Gloo backend)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_ddp_example_under_torchrun():
    """examples/ddp_train.py checks itself: equal ranks, equal to one process on the whole batches."""
    example = Path(__file__).parents[3] / "examples" / "ddp_train.py"
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(example)],
        env={**os.environ, "TORCH_BACKEND": "fake"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # Both ranks report; their lines may interleave in the shared pipe.
    assert run.stdout.count("across ranks 0.00e+00") == 2, run.stdout
