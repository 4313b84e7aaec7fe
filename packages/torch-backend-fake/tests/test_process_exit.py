"""Processes that used the device end with their own exit status, every time.

A stress test: each scenario (process_exit/scenario.py) runs many times while
other work keeps a core busy, and every run's exit status is asserted. The
runs are forked from an interpreter that has imported torch (the kit's fork
server, as its ranks are): what is stressed, the end of a process that used
the device (atexit handlers, the interpreter's finalisation, its threads and
static destructors), is each child's own, and a fresh interpreter's import of
torch would cost each run 2.5 s of CPU. The kit's own exit test starts fresh
interpreters; TORCH_BACKEND_TEST_FORKSERVER=0 starts these fresh too.

The training exit (the race that used to abort) runs RUNS = 60 times: a 5%
failure rate shows with 95% probability (0.95**60 < 0.05). A DDP job is three
process exits (parent and two ranks), so RUNS // 3 jobs give as many exits;
the other scenarios run fewer times. TORCH_BACKEND_EXIT_RUNS scales every
count.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from torch_backend.testing import run_processes

SCENARIO = Path(__file__).parent / "process_exit" / "scenario.py"
RUNS = int(os.environ.get("TORCH_BACKEND_EXIT_RUNS", "60"))
LIMIT_S = 120


def other_work_keeps_a_core_busy(seconds: float = 2.0) -> bool:
    """Whether other work (CI's other session) keeps a core busy now: the tasks running or ready to run beside
    this process, sampled over `seconds`, average at least one. Not the load average: its last minute still
    counts this test's own processes when the session runs it a second time (in discrete memory)."""
    others = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        # /proc/loadavg's fourth field: runnable tasks/all tasks, the one reading it included.
        others.append(int(Path("/proc/loadavg").read_text().split()[3].split("/")[0]) - 1)
        time.sleep(0.02)
    return sum(others) / len(others) >= 1.0


@pytest.fixture(scope="module", autouse=True)
def cpu_load() -> Iterator[None]:
    """A core's worth of competing work, as on a loaded CI machine: a busy process (it stops itself within
    15 min), unless other work already loads the machine that much. In CI the other session does: a busy
    process beside it took a core from that session for the whole run and loaded the scenarios no more."""
    if other_work_keeps_a_core_busy():
        yield
        return
    busy = "import time\nend = time.monotonic() + 900\nwhile time.monotonic() < end: pass"
    proc = subprocess.Popen([sys.executable, "-c", busy])
    yield
    proc.kill()
    proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_every_run_exits(
    expected: int, runs: int, args: Callable[[], tuple[str, ...]], env: dict[str, str] | None = None
) -> None:
    """Runs the scenario `runs` times, two at a time; every run must exit with `expected`."""
    argvs = ([str(SCENARIO), *args()] for _ in range(runs))
    results = run_processes(argvs, env=env, limit_s=LIMIT_S)
    failed = [(code, output) for code, output in results if code != expected]
    if failed:
        pytest.fail(
            f"{len(failed)}/{runs} runs of {args()[0]} exited with {sorted({code for code, _ in failed})} "
            f"instead of {expected}; first one's output:\n{failed[0][1]}"
        )


def test_training_script_exits_zero_right_after_backward():
    assert_every_run_exits(0, RUNS, lambda: ("train", "0"))


def test_training_script_keeps_its_own_nonzero_status():
    assert_every_run_exits(3, max(3, RUNS // 12), lambda: ("train", "3"))


def test_exit_with_work_queued_on_a_non_default_stream():
    assert_every_run_exits(0, max(3, RUNS // 2), lambda: ("queued",))


def test_two_rank_ddp_job_under_spawn():
    # spawn() raises in the parent (exit 1) if a rank dies by a signal or fails.
    assert_every_run_exits(0, max(3, RUNS // 3), lambda: ("ddp", str(free_port())))


def test_forked_child_gets_an_error_and_exits_with_its_own_status():
    assert_every_run_exits(0, max(3, RUNS // 12), lambda: ("forked",))


def test_keyboard_interrupt_mid_training_exits_by_sigint():
    # Python ends an uncaught KeyboardInterrupt by re-raising SIGINT with the
    # default handler (status -SIGINT), after running atexit handlers.
    assert_every_run_exits(-signal.SIGINT, max(3, RUNS // 12), lambda: ("interrupted",))
