"""``python -m torch_backend.testing NAME``: the conformance suite in a fresh interpreter with NAME active."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from torch_backend.testing import DEFAULT_KNOWN_FAILURES, KNOWN_FAILURES_ENV

SUITE = Path(__file__).resolve().parent / "conformance"


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        prog="python -m torch_backend.testing",
        description="Run torch-backend's device conformance kit against an installed backend.",
        epilog="Other arguments go to pytest (e.g. -k streams, -x, -q).",
    )
    parser.add_argument("backend", help="the backend's name, as `python -m torch_backend` lists it")
    parser.add_argument(
        "--known-failures",
        type=Path,
        action="append",
        help="JSON file of OpInfo ops the backend is known to fail ({op: reason}, or null for one of core's "
        "that passes here), merged over core's list (the ops no backend passes on core's CPU fallback); "
        "each listed op must still fail; repeatable",
    )
    return parser.parse_known_args(argv)


def main(argv: list[str] | None = None) -> int:
    args, pytest_args = parse(argv)
    env = os.environ | {"TORCH_BACKEND": args.backend}
    files = args.known_failures or [DEFAULT_KNOWN_FAILURES]
    for path in files:
        if not path.is_file():
            print(f"error: no known-failures file at {path}", file=sys.stderr)
            return 2
    env[KNOWN_FAILURES_ENV] = os.pathsep.join(str(path.resolve()) for path in files)
    # A fresh interpreter: the backend is chosen once per process, at `import torch`.
    command = [sys.executable, "-m", "pytest", str(SUITE), "-p", "no:cacheprovider", "--rootdir", str(SUITE)]
    return subprocess.run([*command, *pytest_args], env=env).returncode
