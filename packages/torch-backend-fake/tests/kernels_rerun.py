"""Reruns a test file with fake's device kernels on, for files whose tests differ with kernels.

CI's first pass runs without device kernels (zero-copy fallback), its second with kernels and
discrete memory; a file that must also pass with kernels in the first pass's memory mode
defines a test that calls `rerun_with_kernels(__file__)`, named `..._in_this_memory_mode` so
the rerun leaves it out.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys


def rerun_with_kernels(test_file: str, timeout: float = 600, leave_out: tuple[str, ...] = ()) -> None:
    """`leave_out`: parts of the names of tests that kernels do not change (the rerun leaves them out too)."""
    select = " and ".join(f"not {name}" for name in ("this_memory_mode", *leave_out))
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file, "-k", select],
        capture_output=True, text=True, timeout=timeout,
        env=os.environ | {"TORCH_BACKEND": "fake", "TORCH_BACKEND_FAKE_KERNELS": "1"},
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    # pytest's summary line: "N passed" and no "N failed" (warnings may say "failed" in their text).
    summary = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    assert re.search(r"\b\d+ passed\b", summary) and not re.search(r"\b\d+ failed\b", summary), summary
