"""`python -m torch_backend` and the `torch-backend` console script."""

import os
import shutil
import subprocess
import sys


def test_module_reports_backends_and_active_devices():
    out = subprocess.run([sys.executable, "-m", "torch_backend"], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    fake = next(line for line in lines if line.strip().startswith("fake "))
    assert "available: simulated device in host memory" in fake
    assert "active: fake (2 devices)" in lines
    assert any(line.strip().startswith("fake:1  Fake Device 1 (host memory)") for line in lines)


def test_console_script_with_backend_disabled():
    script = shutil.which("torch-backend")
    assert script is not None
    out = subprocess.run(
        [script], capture_output=True, text=True, check=True, env={"TORCH_BACKEND": "none", "PATH": ""}
    )
    assert "TORCH_BACKEND: none" in out.stdout
    assert out.stdout.rstrip().endswith("active: none")


def test_help_lists_the_commands_and_bad_ones_fail_clearly():
    out = subprocess.run([sys.executable, "-m", "torch_backend", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    assert "report" in out.stdout and "ops" in out.stdout and "new" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "torch_backend", "frobnicate"], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "invalid choice: 'frobnicate'" in bad.stderr


def test_a_reader_that_stops_early_ends_the_command_quietly():
    # `python -m torch_backend ops | head`: the reader is gone before the table is written.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        out = subprocess.run(
            [sys.executable, "-m", "torch_backend", "ops"], stdout=write_end, stderr=subprocess.PIPE, text=True
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in out.stderr and "BrokenPipeError" not in out.stderr, out.stderr
    assert out.returncode == 1
