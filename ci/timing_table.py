"""Where CI's time went: every nox session's wall time and result, from nox's JSON report (`--report`).

Usage: python ci/timing_table.py REPORT.json WALL_SECONDS [NOX_LOG]

Prints one row per session (slowest first), the sum of the sessions' times
(about twice the wall time when the two workers stay busy) and the run's wall
time. A run over the budget still passes, but a warning names its slowest
sessions, so that the change which pushed CI over sees it.

With NOX_LOG (nox's output, saved by .ci/run), the end of every failed
session's output is printed again last: parallel nox prints each session as
one block when it ends, so a failure's reason is otherwise far up the log,
out of the tail that CI's report keeps.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# CI must finish in 90 minutes; the budget keeps room for a loaded machine and for growth.
BUDGET_MINUTES = 45


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def name(session: dict) -> str:
    """The session as `nox -s` takes it (a parametrized one with its parameters)."""
    return session["signatures"][-1] if session.get("signatures") else session["name"]


# Lines of each failed session's output printed again at the end.
FAILED_TAIL_LINES = 40


def session_output(log: str, session: str) -> list[str]:
    """The block nox printed for one session: from 'Running session NAME' to its last line."""
    lines = log.splitlines()
    start = max((i for i, line in enumerate(lines) if line.endswith(f"Running session {session}")), default=None)
    if start is None:
        return []
    end = next((i for i in range(start, len(lines)) if f"Session {session} " in lines[i]), len(lines) - 1)
    return lines[start : end + 1]


def print_failed_tails(sessions: list[dict], log_path: Path) -> None:
    log = log_path.read_text(errors="replace") if log_path.is_file() else ""
    for s in sessions:
        if s["result"] not in ("failed", "aborted"):
            continue
        block = session_output(log, name(s))
        print(f"\n---- the last {FAILED_TAIL_LINES} lines of failed session {name(s)} ({len(block)} in all) ----")
        print("\n".join(block[-FAILED_TAIL_LINES:]) if block else f"(no output of it found in {log_path})")


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    report, wall = Path(argv[0]), float(argv[1])
    if not report.is_file():
        print(f"ci timing: no nox report at {report} (nox did not get as far as writing it); wall {minutes(wall)}")
        return 0
    sessions = json.loads(report.read_text())["sessions"]
    if len(argv) == 3:
        print_failed_tails(sessions, Path(argv[2]))
    rows = sorted(sessions, key=lambda s: s["duration"], reverse=True)
    width = max(len("sum of sessions"), *(len(name(s)) for s in rows))
    print()
    print("CI time by nox session (slowest first; two run at a time):")
    print(f"  {'session':<{width}}  {'time':>6}  result")
    for s in rows:
        print(f"  {name(s):<{width}}  {minutes(s['duration']):>6}  {s['result']}")
    busy = sum(s["duration"] for s in sessions)
    print(f"  {'sum of sessions':<{width}}  {minutes(busy):>6}")
    print(f"  {'wall time':<{width}}  {minutes(wall):>6}  (budget {BUDGET_MINUTES}:00; CI's limit 90:00)")
    if wall > BUDGET_MINUTES * 60:
        slowest = ", ".join(f"{name(s)} ({minutes(s['duration'])})" for s in rows[:3])
        print(
            f"WARNING: CI took {minutes(wall)}, over its {BUDGET_MINUTES}-minute budget. "
            f"Slowest sessions: {slowest}. Shard, cache or trim before adding more."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
