"""Where CI's time went: every nox session's wall time and result, from nox's JSON report (`--report`).

Usage: python ci/timing_table.py REPORT.json WALL_SECONDS

Prints one row per session (slowest first), the sum of the sessions' times
(about twice the wall time when the two workers stay busy) and the run's wall
time. A run over the budget still passes, but a warning names its slowest
sessions, so that the change which pushed CI over sees it.
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


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.exit(__doc__)
    report, wall = Path(argv[0]), float(argv[1])
    if not report.is_file():
        print(f"ci timing: no nox report at {report} (nox did not get as far as writing it); wall {minutes(wall)}")
        return 0
    sessions = json.loads(report.read_text())["sessions"]
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
