"""ci/timing_table.py: the table `.ci/run` ends with, and its warning when CI runs over budget."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "ci" / "timing_table.py"


def table(tmp_path: Path, wall_seconds: int, sessions: list[dict] | None) -> str:
    report = tmp_path / "report.json"
    if sessions is not None:
        report.write_text(json.dumps({"result": 1, "sessions": sessions}))
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(report), str(wall_seconds)], capture_output=True, text=True, timeout=60
    )
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
