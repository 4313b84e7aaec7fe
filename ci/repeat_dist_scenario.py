"""Runs one of the kit's distributed scenarios again and again on the native backend, to catch a rare hang.

    .nox/compat-torch-2-15/bin/python ci/repeat_dist_scenario.py groups --runs 100 --limit 90
    .nox/build/bin/python ci/repeat_dist_scenario.py pipeline --worker parallel --world 4 --device npu --busy 2

(`--worker parallel`: a scenario of the kit's parallel_worker.py, 4 ranks; `--busy N`: N processes spin on
the CPU beside the ranks for the whole series, the load of CI's second session; the device's settings, such
as TORCH_BACKEND_FAKE_DISCRETE=1 or npu's ASCEND_HOME_PATH, come from the environment.)

(any virtualenv with torch-backend-core and fake installed; `nox -s "compat(torch='2.15')"` makes that
one). Each run starts the scenario's ranks (2) against a fresh TCP store; a run whose ranks have not all
exited within `--limit` seconds is a hang: the script prints every hung rank's native stacks (gdb, where
installed) and Python stacks (faulthandler, on SIGUSR1), ends the ranks and exits 1. A rank exiting
non-zero exits 2. Used for issue 44's destroy_process_group hang on torch 2.15 (100 runs in a row, with
another process keeping one core busy).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch.distributed as dist

import torch_backend.testing.conformance as kit

WORKERS = {name: Path(kit.__file__).parent / f"{name}_worker.py" for name in ("distributed", "parallel", "stress")}
#: Spins on one core until killed.
BUSY = "while True: pass"
# Starts the worker with Python stacks dumped on SIGUSR1.
LAUNCHER = (
    "import faulthandler, runpy, signal, sys\n"
    "faulthandler.register(signal.SIGUSR1, all_threads=True)\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def report_hang(procs: list[subprocess.Popen]) -> None:
    for rank, proc in enumerate(procs):
        if proc.poll() is not None:
            continue
        print(f"--- rank {rank} (pid {proc.pid}) native stacks:", flush=True)
        if shutil.which("gdb"):
            stacks = subprocess.run(
                ["gdb", "-p", str(proc.pid), "-batch", "-ex", "thread apply all bt"], capture_output=True, text=True
            )
            print(stacks.stdout[-30000:], flush=True)
        os.kill(proc.pid, signal.SIGUSR1)
    time.sleep(2)
    for rank, proc in enumerate(procs):
        proc.kill()
        print(f"--- rank {rank} output:\n{proc.communicate()[0][-8000:]}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", help="a scenario of the kit's distributed_worker.py (groups, ops, fsdp, ...)")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--limit", type=float, default=90.0, help="seconds a run may take before it counts as hung")
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--device", default="fake")
    parser.add_argument("--worker", choices=sorted(WORKERS), default="distributed")
    parser.add_argument("--busy", type=int, default=0, help="processes spinning on the CPU beside the ranks")
    args = parser.parse_args()
    backend = f"{args.device}ccl"
    env = os.environ | {"TORCH_BACKEND": args.device, "TORCH_BACKEND_TEST_DIST_BACKEND": backend}
    env["PARALLEL_TEST_DIR"] = tempfile.mkdtemp(prefix="repeat-dist-")  # the checkpoint scenario writes there
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as launcher:
        launcher.write(LAUNCHER)
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.busy)]
    try:
        return repeat(args, env, launcher.name)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()


def repeat(args: argparse.Namespace, env: dict[str, str], launcher: str) -> int:
    durations = []
    for run in range(args.runs):
        store = dist.TCPStore("127.0.0.1", 0, args.world, is_master=True, wait_for_workers=False)
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    launcher,
                    str(WORKERS[args.worker]),
                    args.scenario,
                    str(store.port),
                    str(rank),
                    str(args.world),
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for rank in range(args.world)
        ]
        start = time.monotonic()
        while time.monotonic() - start < args.limit and any(proc.poll() is None for proc in procs):
            time.sleep(0.2)
        if any(proc.poll() is None for proc in procs):
            print(f"run {run + 1}: ranks still running after {args.limit:.0f} s", flush=True)
            report_hang(procs)
            return 1
        for rank, proc in enumerate(procs):
            out = proc.communicate()[0]
            if proc.returncode != 0:
                print(f"run {run + 1}: rank {rank} exited {proc.returncode}:\n{out[-8000:]}", flush=True)
                return 2
        durations.append(time.monotonic() - start)
        print(f"run {run + 1}: ok in {durations[-1]:.1f} s", flush=True)
    print(
        f"{args.runs} runs of '{args.scenario}' in a row: ok (each {min(durations):.1f} - {max(durations):.1f} s, "
        f"{args.busy} busy processes beside)",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
