"""Device tensors through torch.multiprocessing: queues and spawn arguments share device memory.

Core pickles the backend's tensors as inter-process memory handles (the runtime's
ipc_* symbols; fake's device memory is a shared-memory file another process maps).
Each case runs sharing/scenario.py in a process of its own; every process involved
must exit 0 within its time limit (a hang fails the test), in both memory modes.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

SCENARIO = Path(__file__).parent / "sharing" / "scenario.py"


def run(case: str, **env: str) -> tuple[list[object], str]:
    out = subprocess.run(
        [sys.executable, str(SCENARIO), case], capture_output=True, text=True, timeout=240, env=os.environ | env
    )
    assert out.returncode == 0, f"exited {out.returncode}:\n{out.stdout}\n{out.stderr}"
    lines = out.stdout.splitlines()
    return [ast.literal_eval(line) if line.startswith(("(", "[")) else line for line in lines], out.stderr


def test_queue_shares_device_memory_both_ways():
    found, _ = run("queue")
    assert found[0] == ("received", "fake:0", (1, 3), [[2.0, 5.0], [3.0, 6.0], [4.0, 7.0]])
    assert found[1] == ("parameter", "Parameter", True, [1.0, 1.0, 1.0])
    assert found[2] == ("cpu", "cpu", [5.0, 5.0])  # PyTorch's own reducer still serves CPU tensors
    assert found[3] == "consumer exit 0"
    # The consumer doubled its view in place: the producer's tensor changed (shared, not copied).
    assert found[4] == "producer sees [0.0, 1.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 8.0, 9.0]"


def test_spawn_arguments_on_another_device():
    found, _ = run("spawn")
    assert found == [[("spawned", 0, "fake:1", [0.0, 1.0, 2.0, 3.0]), ("spawned", 1, "fake:1", [0.0, 1.0, 2.0, 3.0])]]


def test_a_runtime_without_handles_is_an_error_not_a_hang():
    found, stderr = run("unshareable", TORCH_BACKEND_FAKE_IPC="0")
    kind, message = found[0][1], found[0][2]
    assert (found[0][0], kind) == ("error", "RuntimeError")
    assert "'fake' cannot share device memory with other processes" in message
    assert "tensor.cpu()" in message
    assert "cannot share device memory" in stderr  # the producer is told too (a warning)
    assert found[1] == "consumer exit 0"
