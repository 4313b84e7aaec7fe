"""ci/timing_table.py: the table `.ci/run` ends with, and its warning when CI runs over budget."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "ci" / "timing_table.py"


def table(tmp_path: Path, wall_seconds: int, sessions: list[dict] | None, log: str | None = None) -> str:
    report = tmp_path / "report.json"
    if sessions is not None:
        report.write_text(json.dumps({"result": 1, "sessions": sessions}))
    args = [sys.executable, str(SCRIPT), str(report), str(wall_seconds)]
    if log is not None:
        (tmp_path / "nox.log").write_text(log)
        args.append(str(tmp_path / "nox.log"))
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


SESSIONS = [
    {"name": "build", "signatures": ["build"], "result": "success", "duration": 115.0},
    {"name": "compat", "signatures": ["compat(torch='2.15')"], "result": "success", "duration": 913.0},
    {"name": "lint", "signatures": ["lint"], "result": "failed", "duration": 2.0},
    {"name": "tests-fake", "signatures": ["tests-fake"], "result": "success", "duration": 378.0},
]


def test_every_session_slowest_first_with_the_totals(tmp_path: Path):
    out = table(tmp_path, 1941, SESSIONS)
    rows = [line.split() for line in out.splitlines() if line.startswith("  ")][1:]
    assert [row[0] for row in rows[:4]] == ["compat(torch='2.15')", "tests-fake", "build", "lint"]
    assert rows[0][1:] == ["15:13", "success"] and rows[3][1:] == ["0:02", "failed"]
    assert "sum of sessions        23:28" in out
    assert "wall time              32:21" in out
    assert "WARNING" not in out


def test_over_budget_still_passes_but_names_the_slowest_sessions(tmp_path: Path):
    out = table(tmp_path, 46 * 60, SESSIONS)
    assert "WARNING: CI took 46:00, over its 45-minute budget." in out
    assert "Slowest sessions: compat(torch='2.15') (15:13), tests-fake (6:18), build (1:55)." in out


def test_no_report_when_nox_stopped_early(tmp_path: Path):
    assert "no nox report" in table(tmp_path, 20, None)


def test_a_failed_sessions_output_is_printed_again_before_the_table(tmp_path: Path):
    # Parallel nox prints each session as one block when it ends: lint's failure sits above tests-fake's block.
    log = "\n".join(
        ["nox > Running session build", "built", "nox > Session build was successful in 2 minutes."]
        + ["nox > Running session lint", *(f"lint line {i}" for i in range(100)), "ruff: E501 line too long"]
        + ["nox > Session lint failed.", "nox > Running session tests-fake"]
        + [f"test line {i}" for i in range(500)]
        + ["nox > Session tests-fake was successful in 6 minutes."]
    )
    out = table(tmp_path, 1941, SESSIONS, log)
    tail = out[: out.index("CI time by nox session")]
    assert "the last 40 lines of failed session lint (103 in all)" in tail
    assert "ruff: E501 line too long" in tail and "lint line 62" in tail and "lint line 61" not in tail
    assert "test line" not in tail and "built" not in tail
