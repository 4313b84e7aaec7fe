"""The kit's fork server (torch_backend.testing._forkserver): a forked rank behaves as `python SCRIPT ARGS` would."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from torch_backend.testing import _forkserver

REPORT = """
import atexit, json, os, sys
import torch
atexit.register(lambda: print("atexit ran", flush=True))
print(json.dumps({"argv": sys.argv, "path0": sys.path[0], "cwd": os.getcwd(), "main": __name__,
                  "file": globals().get("__file__"), "parent": os.getppid(), "setting": os.environ.get("SETTING"),
                  "initialised": torch.fake.is_initialized(), "stdin": sys.stdin.read()}))
x = torch.ones(3, device="fake") * 2
print("sum", x.sum().item())
sys.exit(int(sys.argv[-1]))
"""


@pytest.fixture(scope="module")
def servers():
    """A set of servers of this module's own (one server per environment serves its tests), closed after."""
    fresh = _forkserver.Servers()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_forkserver, "_SERVERS", fresh)
        yield fresh
    fresh.close()


def env(**extra: str) -> dict[str, str]:
    return os.environ | {"TORCH_BACKEND": "fake"} | extra


def report(rank: _forkserver.Rank) -> tuple[int, dict, str]:
    code = rank.wait(timeout=120)
    out = rank.output()
    return code, json.loads(out.splitlines()[0]), out


def test_a_forked_script_sees_its_own_arguments_place_and_environment(
    servers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    script = tmp_path / "rank.py"
    script.write_text(REPORT)
    monkeypatch.chdir(tmp_path)
    code, seen, out = report(_forkserver.start_rank([str(script), "a", "7"], env(SETTING="one")))
    assert code == 7, out  # its own exit status
    assert seen["argv"] == [str(script), "a", "7"] and seen["path0"] == str(tmp_path)
    assert seen["main"] == "__main__" and seen["file"] == str(script) and seen["cwd"] == str(tmp_path)
    assert seen["setting"] == "one" and seen["stdin"] == ""
    assert seen["parent"] != os.getpid()  # forked by the server, not started by this process
    assert not seen["initialised"]  # the device runtime is the child's to initialise
    assert "sum 6.0" in out and out.rstrip().endswith("atexit ran")  # the ordinary exit, atexit included


def test_code_given_with_dash_c_runs_as_python_dash_c(servers):
    code, seen, out = report(_forkserver.start_rank(["-c", REPORT, "x", "0"], env()))
    assert code == 0, out
    assert seen["argv"] == ["-c", "x", "0"] and seen["path0"] == "" and seen["file"] is None


def test_each_environment_has_its_server_and_a_server_serves_many_ranks(servers):
    parents = {}
    for setting in ("one", "two", "one"):
        rank = _forkserver.start_rank(["-c", REPORT, "0"], env(SETTING=setting))
        code, seen, out = report(rank)
        assert code == 0 and seen["setting"] == setting, out
        parents.setdefault(setting, set()).add(seen["parent"])
    assert len(parents["one"]) == 1 and parents["one"] != parents["two"]


# What a rank's C++ code would read (getenv) as well as its Python code.
READ_SETTING = """
import ctypes, json, os
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
name = "DIST_TEST_TIMEOUT_S"
print(json.dumps({"parent": os.getppid(), "python": os.environ.get(name), "c": libc.getenv(name.encode()).decode()}))
"""


def test_settings_read_after_import_share_a_server_and_each_rank_sees_its_own(servers):
    assert "DIST_TEST_TIMEOUT_S" in _forkserver.NOT_READ_AT_IMPORT
    seen = []
    for value in ("4", "30"):
        rank = _forkserver.start_rank(["-c", READ_SETTING], env(DIST_TEST_TIMEOUT_S=value))
        code, got, out = report(rank)
        assert code == 0, out
        assert got["python"] == got["c"] == value, out
        seen.append(got["parent"])
    assert seen[0] == seen[1] != os.getpid()  # one server forked both


def test_failures_keep_their_status_and_output(servers):
    crash = _forkserver.start_rank(["-c", "raise ValueError('rank broke')"], env())
    assert crash.wait(timeout=60) == 1
    assert "ValueError: rank broke" in crash.output()
    hung = _forkserver.start_rank(["-c", "import time; print('up', flush=True); time.sleep(600)"], env())
    with pytest.raises(_forkserver.subprocess.TimeoutExpired):
        hung.wait(timeout=1)
    hung.kill()
    assert hung.wait(timeout=60) == -signal.SIGKILL
    assert "up" in hung.output()


def test_a_runtime_initialised_at_import_is_refused_and_ranks_start_fresh(servers, tmp_path: Path):
    # sitecustomize initialises the device before the server could fork: a child could not use it.
    (tmp_path / "sitecustomize.py").write_text("import torch\ntorch.fake.init()\n")
    initialising = env(PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    assert servers.for_env(initialising) is None
    code, seen, out = report(_forkserver.start_rank(["-c", REPORT, "0"], initialising))
    assert code == 0 and seen["parent"] == os.getpid(), out  # started fresh by this process


def test_the_setting_starts_every_rank_fresh(servers, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(_forkserver.FORKSERVER_ENV, "0")
    code, seen, out = report(_forkserver.start_rank(["-c", REPORT, "0"], env()))
    assert code == 0 and seen["parent"] == os.getpid(), out


def test_run_processes_returns_each_status_and_output_in_order_and_fails_one_still_running(servers):
    from torch_backend.testing import run_processes

    ends = [
        "import sys; print('first', flush=True); sys.exit(3)",
        "import time; time.sleep(1); print('second', flush=True)",
        "raise KeyboardInterrupt",
    ]
    results = run_processes((["-c", code] for code in ends), env={"TORCH_BACKEND": "fake"})
    assert [code for code, _ in results] == [3, 0, -signal.SIGINT]
    assert "first" in results[0][1] and "second" in results[1][1] and "KeyboardInterrupt" in results[2][1]
    with pytest.raises(pytest.fail.Exception, match=r"still running after 2 s:\n.*up"):
        run_processes([["-c", "import time; print('up', flush=True); time.sleep(600)"]], limit_s=2)
