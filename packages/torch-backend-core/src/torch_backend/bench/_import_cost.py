"""Import cost of the backend: what autoload adds to `import torch`.

Autoload is the only difference between `import torch` with and without a
backend, so it is timed directly (PyTorch's own autoload entry, called by hand
with automatic autoload off): far less noisy than subtracting two imports.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

CODE = (
    "import time, torch\n"
    "start = time.perf_counter()\n"
    "torch._import_device_backends()\n"
    "print(time.perf_counter() - start)\n"
)


def _autoload_seconds() -> float:
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def import_cost_ms(repeats: int) -> tuple[float, float]:
    """Median and interquartile spread (ms) of the autoload cost over fresh processes."""
    costs = [_autoload_seconds() * 1000 for _ in range(max(repeats, 3))]
    q = statistics.quantiles(costs, n=4)
    return statistics.median(costs), q[2] - q[0]
