"""Helpers for cross-package tests, which mostly run Python in a subprocess:
backend selection happens once per process, at `import torch`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def run_python(
    code: str, env: dict[str, str] | None = None, extra_path: Path | None = None
) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("TORCH_BACKEND",)}
    full_env.update(env or {})
    if extra_path is not None:
        full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(extra_path), full_env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, timeout=120)


@pytest.fixture
def plugin_dir(tmp_path: Path):
    """Installs fake distributions with `torch_backend.backends` entry points on a PYTHONPATH folder."""

    def add(dist: str, entry_name: str, target: str, module_source: str | None = None) -> Path:
        info = tmp_path / f"{dist}-0.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.0\n")
        (info / "entry_points.txt").write_text(f"[torch_backend.backends]\n{entry_name} = {target}\n")
        if module_source is not None:
            module = target.split(":")[0]
            (tmp_path / f"{module}.py").write_text(module_source)
        return tmp_path

    return add
