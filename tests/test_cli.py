"""`python -m torch_backend` and the `torch-backend` console script."""

import json
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
    assert (
        "torch.distributed: init_process_group() gives 'fakeccl' (fake collectives, on the device's streams); "
        "'staged_gloo' by name"
    ) in lines
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


def test_ops_run_reports_where_a_scripts_ops_ran_and_keeps_its_exit_status(tmp_path):
    # `python -m torch_backend ops --json FILE --run SCRIPT ARGS`: the script runs as `python SCRIPT ARGS`
    # would (its argv, its exit status), and the report is printed and written even when it fails.
    script = tmp_path / "step.py"
    script.write_text(
        "import sys, torch\n"
        "x = torch.randn(4, 4, device='fake')\n"
        "y = torch.nn.functional.conv2d(x[None, None], torch.ones(1, 1, 3, 3, device='fake'))\n"
        "print('argv', sys.argv[1:], y.shape[-1])\n"
        "sys.exit(int(sys.argv[1]))\n"
    )
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "torch_backend", "ops", "--json", str(report), "--run", str(script)]
    out = subprocess.run([*command, "3"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 3, out.stderr
    assert "argv ['3'] 2" in out.stdout
    assert "convolution" in out.stdout and "on the CPU fallback" in out.stdout
    rows = {row["op"]: row for row in json.loads(report.read_text())}
    assert rows["convolution"]["zero_copy_calls"] + rows["convolution"]["copying_calls"] == 1
    missing = subprocess.run(
        [sys.executable, "-m", "torch_backend", "ops", "--run"], capture_output=True, text=True, timeout=120
    )
    assert missing.returncode == 2 and "ops --run needs a script" in missing.stderr
