"""The device conformance kit: what every backend must do, runnable against any backend by name.

    python -m torch_backend.testing NAME [--known-failures FILE] [pytest arguments]

runs the kit's suite (``torch_backend/testing/conformance``) with ``TORCH_BACKEND=NAME``
(FILE defaults to core's list, ``DEFAULT_KNOWN_FAILURES``):
the ``torch.<device>`` module (devices, streams, events, allocator statistics, RNG),
tensors and copies, pinned memory, serialization, ``torch.accelerator``, AMP, PyTorch's
OpInfo database against CPU (the backend's known failures in FILE), the check that every
argument an op writes matches CPU, short training runs against CPU, bad input, collectives
and DDP/FSDP2 with real processes, the profiler, torch.compile and exit statuses. Needs pytest and
expecttest (``pip install torch-backend-core[testing]``).

The helpers below are what the suite's tests share; a backend's own tests may use them too.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

#: Where the runner passes the backend's known-failures file to the OpInfo test.
KNOWN_FAILURES_ENV = "TORCH_BACKEND_KNOWN_FAILURES"
#: The OpInfo ops no backend passes on core's CPU fallback (CUDA-only Jiterator ops, sparse
#: layouts, samples the sweep cannot move to a device), each with the reason: every backend's
#: known failures start from it, and the kit's default.
DEFAULT_KNOWN_FAILURES = Path(__file__).resolve().parent / "known_failures.json"


def load_known_failures(*paths: Path | str) -> dict[str, str]:
    """``{op: reason}``: core's list, then each known-failures JSON file merged over it in order.

    An entry's value is the reason; ``{"reason": ..., "torch_below": "2.13"}`` for a failure of
    the torch releases before that one only (ATen changed since: on later releases the op is not
    listed, so it must pass there); ``null`` for one of core's ops that passes on this backend
    (its kernels cover it), which drops the op. A backend's file so lists only where its device
    differs from core's fallback, never a copy of core's list.
    """
    import torch
    from torch.torch_version import TorchVersion

    known: dict[str, str] = {}
    for path in (DEFAULT_KNOWN_FAILURES, *paths):
        for op, entry in json.loads(Path(path).read_text()).items():
            if entry is None:
                known.pop(op, None)
                continue
            if isinstance(entry, dict):
                below = entry.get("torch_below")
                if below is not None and TorchVersion(torch.__version__) >= below:
                    known.pop(op, None)
                    continue
                entry = entry["reason"]
            known[op] = entry
    return known


@contextmanager
def quiet() -> Iterator[None]:
    """Warnings off (deprecated ops, resized out= tensors: OpInfo's samples warn by the thousand), restored after."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def device_type() -> str:
    """The device type under test: the active backend's name (raises if none is active)."""
    from torch_backend import active_backend

    backend = active_backend()
    if backend is None:
        raise RuntimeError(
            "no torch-backend backend is active: run the kit with `python -m torch_backend.testing NAME`"
        )
    return backend.name


def device_module() -> ModuleType:
    """``torch.<device>``, the module core generated for the backend under test."""
    import torch

    return getattr(torch, device_type())


def device_count() -> int:
    return device_module().device_count()


@functools.cache
def stream_sleep_supported() -> bool:
    """Whether the runtime implements the optional ``stream_sleep`` (tests of asynchrony need it)."""
    try:
        device_module()._sleep(1)
    except NotImplementedError:
        return False
    device_module().synchronize()
    return True


def dropout_on_device() -> bool:
    """Whether dropout runs on a device kernel (its masks then come from the device's generator, not CPU's)."""
    import torch  # noqa: F401  (activates the backend)

    from torch_backend import _C

    return any(op == "native_dropout" and on_device for op, _, _, on_device, _ in _C._op_table())


def run_python(code: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh interpreter with the same backend; it must exit with status 0."""
    full_env = os.environ | {"TORCH_BACKEND": device_type()} | env
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=timeout)
    assert out.returncode == 0, f"exited {out.returncode}:\n{out.stdout}{out.stderr}"
    return out


def run_ranks(
    args: list[str],
    world: int,
    *,
    env: dict[str, str] | None = None,
    rank_env: Callable[[int], dict[str, str]] | None = None,
    limit_s: float = 120.0,
    exit_times: list[float] | None = None,
    label: str = "ranks",
) -> list[tuple[int, str]]:
    """Starts ``world`` ranks, ``python ARGS PORT RANK WORLD`` each, around a TCP store this process serves
    (forked from a server that has imported torch: ``_forkserver``);
    returns (exit status, output) per rank. ``rank_env(rank)`` adds to one rank's environment;
    ``exit_times`` receives the seconds until each rank (in rank order) had exited. Ranks still running
    after ``limit_s`` fail the test (pytest.fail, naming ``label``), after being killed."""
    import time

    import pytest
    import torch.distributed as dist

    from torch_backend.testing._forkserver import start_rank

    store = dist.TCPStore("127.0.0.1", 0, world, is_master=True, wait_for_workers=False)
    base_env = os.environ | {"TORCH_BACKEND": device_type()} | (env or {})
    ranks = [
        start_rank([*args, str(store.port), str(rank), str(world)], base_env | (rank_env(rank) if rank_env else {}))
        for rank in range(world)
    ]
    started = time.monotonic()
    results = []
    for rank in ranks:
        try:
            code = rank.wait(timeout=max(1.0, started + limit_s - time.monotonic()))
        except subprocess.TimeoutExpired:
            report = hang_report(ranks)
            hung = {index for index, other in enumerate(ranks) if other.returncode is None}
            for other in ranks:
                other.kill()
            for other in ranks:
                other.wait(timeout=60)
            outputs = "".join(
                f"\n--- rank {index} ({'hung, killed' if index in hung else f'exited {other.returncode}'})"
                f", its last output:\n{_tail(other.output(), 60)}"
                for index, other in enumerate(ranks)
            )
            pytest.fail(f"{label}: ranks still running after {limit_s:.0f} s{outputs}\n{report}")
        results.append((code, rank.output()))
        if exit_times is not None:
            exit_times.append(time.monotonic() - started)
    del store
    return results


def _tail(text: str, lines: int) -> str:
    kept = text.splitlines()[-lines:]
    return "\n".join(kept) if kept else "(nothing)"


def hang_report(ranks: list) -> str:
    """Where each still-running rank is: its Python threads' stacks (written to its own output by
    faulthandler on SIGUSR1, where the rank was forked from the kit's server) and every native thread's
    stack (gdb, where it is installed). Called before the ranks are killed."""
    import shutil
    import signal
    import time

    running = [(index, rank) for index, rank in enumerate(ranks) if rank.returncode is None]
    for _, rank in running:
        try:
            os.kill(rank.pid, signal.SIGUSR1)
        except ProcessLookupError:
            pass
    time.sleep(1.0)  # faulthandler writes from a signal handler: a moment
    gdb = shutil.which("gdb")
    if gdb is None:
        return "(no gdb here: native stacks not taken)"
    stacks = []
    for index, rank in running:
        try:
            out = subprocess.run(
                [gdb, "-p", str(rank.pid), "-batch", "-nx", "-ex", "thread apply all bt 30"],
                capture_output=True,
                text=True,
                timeout=90,
            ).stdout
        except subprocess.TimeoutExpired:
            out = "(gdb did not finish in 90 s)"
        frames = [line for line in out.splitlines() if line.startswith(("Thread ", "#"))]
        stacks.append(f"--- rank {index} (pid {rank.pid}), native stacks:\n" + "\n".join(frames))
    return "\n".join(stacks)


def run_processes(
    argvs: Iterable[list[str]], *, env: dict[str, str] | None = None, limit_s: float = 120.0, at_once: int = 2
) -> list[tuple[int, str]]:
    """Runs ``python ARGV`` (``SCRIPT ARGS`` or ``-c CODE ARGS``) for each of ``argvs``, ``at_once`` at a time,
    in this process's environment with ``env`` added; returns (exit status, output) per process, in order.

    Each is forked from a server that has imported torch (``_forkserver``), as the ranks of ``run_ranks`` are:
    a fresh interpreter's import of torch costs about 2.5 s of CPU, and the child's end is its own (the
    interpreter's ordinary exit). An argv is taken only when its process starts (a generator may pick a free
    port for it then). A process still running ``limit_s`` after it started fails the test (pytest.fail),
    after being killed."""
    import collections
    import time

    import pytest

    from torch_backend.testing._forkserver import start_rank

    base_env = os.environ | (env or {})
    pending, running, results = iter(argvs), collections.deque(), []
    while True:
        while len(running) < at_once and (argv := next(pending, None)) is not None:
            running.append((start_rank(argv, base_env), time.monotonic(), argv))
        if not running:
            return results
        process, started, argv = running.popleft()
        try:
            code = process.wait(timeout=max(1.0, started + limit_s - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other, _, _ in [(process, started, argv), *running]:
                other.kill()
                other.wait(timeout=60)
            pytest.fail(f"python {' '.join(argv)} still running after {limit_s:.0f} s:\n{process.output()}")
        results.append((code, process.output()))


def all_reduce_until_failure(tensor: object, times: int = 20) -> None:
    """In a rank of a test whose collective library fails mid-run (an injected fault): all-reduces
    ``tensor`` ``times`` times, each waited for (an async_op wait, which only orders the stream) and read
    back to the host, every sum checked, so a failed collective's output is never taken for a result. At
    the first error prints ``ERROR after <s>s in <all_reduce|wait|read>: <type>: <message>`` (failed_read
    parses it) and exits 3 through the interpreter's ordinary exit; prints ``no error`` if none came."""
    import time

    import torch
    import torch.distributed as dist

    assert isinstance(tensor, torch.Tensor)
    start, expected, stage = time.monotonic(), tensor.cpu(), "all_reduce"
    try:
        for _ in range(times):
            stage = "all_reduce"
            work = dist.all_reduce(tensor, async_op=True)
            stage = "wait"  # raises if the failure is already known, else returns at once (orders the stream)
            work.wait()
            stage = "read"
            values = tensor.cpu()  # a failed collective's output: this must raise
            expected = expected * dist.get_world_size()
            assert torch.equal(values, expected), f"a stale output was read: {values} (the sum is {expected})"
    except Exception as error:
        print(f"ERROR after {time.monotonic() - start:.1f}s in {stage}: {type(error).__name__}: {error}", flush=True)
        sys.exit(3)
    print("no error", flush=True)


def failed_read(output: str) -> tuple[float, str]:
    """(seconds, line) of the error all_reduce_until_failure reported in a rank's ``output``, which must
    be a DistBackendError from waiting for the failed collective (when the failure was known by then) or
    from reading its output (never a stale value), as torch raises for NCCL."""
    line = next(line for line in output.splitlines() if line.startswith("ERROR after"))
    assert " in read: DistBackendError" in line or " in wait: DistBackendError" in line, line
    return float(line.split("after ")[1].split("s in ")[0]), line


def assert_kernel_list_documented(page: Path, section: str, env: dict[str, str]) -> None:
    """The list of ops on device kernels between ``<!-- kernels:SECTION -->`` and ``<!-- end kernels:SECTION -->``
    in ``page`` (docs/kernels.md) is what ``python -m torch_backend ops --markdown`` prints under ``env``."""
    text = page.read_text()
    start, end = f"<!-- kernels:{section} -->", f"<!-- end kernels:{section} -->"
    assert start in text and end in text, f"{page} has no section {start} ... {end}"
    documented = text.split(start, 1)[1].split(end, 1)[0].strip()
    out = subprocess.run(
        [sys.executable, "-m", "torch_backend", "ops", "--markdown"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    generated = out.stdout.strip()
    assert documented == generated, f"{page.name}'s {section} list is out of date; it should read:\n{generated}"


def main(argv: list[str] | None = None) -> int:
    """Runs the conformance suite against the backend named first in ``argv`` (see the module doc)."""
    from torch_backend.testing._runner import main as run

    return run(argv)


__all__ = [
    "DEFAULT_KNOWN_FAILURES",
    "KNOWN_FAILURES_ENV",
    "assert_kernel_list_documented",
    "device_count",
    "device_module",
    "device_type",
    "dropout_on_device",
    "load_known_failures",
    "main",
    "run_python",
    "run_ranks",
    "stream_sleep_supported",
]
