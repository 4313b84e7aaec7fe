"""``python -m torch_backend.testing.stress``: the kit's stress patterns on the active backend, as a table.

(Part of the kit, not of bench/: it runs the kit's rank scripts, and product modules never import the kit.)

Runs the conformance kit's stress scenarios (``testing/conformance/stress_worker.py``: 10,000 collectives,
100,000 event record/wait pairs and kernels between two host synchronisations, 2 ranks on the native
c10d backend) and prints, per pattern, the host's cost per call late in a run against early in it (the kit
asserts <= 1.5), the whole cost per call with a host synchronisation every few calls and with one for the
whole run, their ratio (<= 3) and the memory the runs added (< 64 MiB).
``--json PATH`` writes the rows; ``--markdown PATH`` renders such a file as the table in
docs/benchmarks.md (tests/test_guide.py checks the page against the JSON there).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

SCENARIOS = ("collectives", "streams")


def measure() -> list[dict]:
    from torch_backend.testing import device_type, run_ranks
    from torch_backend.testing.conformance import stress_worker

    device = device_type()
    env = stress_worker.native_env(device) | {"TORCH_FR_BUFFER_SIZE": "0"}
    rows = []
    for scenario in SCENARIOS:
        results = run_ranks([stress_worker.__file__, scenario], 2, env=env, limit_s=600, label=scenario)
        for rank, (code, out) in enumerate(results):
            if code != 0:
                raise SystemExit(f"{scenario}: rank {rank} exited {code}:\n{out}")
            for line in out.splitlines():
                if line.startswith("STRESS "):
                    rows.append(json.loads(line.split(" ", 1)[1]) | {"rank": rank, "device": device})
    return rows


def render(rows: list[dict]) -> str:
    """One line per pattern: the median over ranks of each figure."""
    patterns = list(dict.fromkeys(row["pattern"] for row in rows))
    lines = [
        "| pattern | calls between syncs | host cost late / early | us per call, sync every few "
        "| us per call, one sync | ratio | MiB added |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for pattern in patterns:
        mine = [row for row in rows if row["pattern"] == pattern]
        median = {key: statistics.median(row[key] for row in mine) for key in mine[0] if key not in ("pattern",)
                  and isinstance(mine[0][key], (int, float)) and key != "rank"}  # fmt: skip
        lines.append(
            f"| {pattern} | {int(median['large']):,} (vs {int(median['small']):,}) | {median['late_over_early']:.2f} "
            f"| {median['us_per_call_small']:.1f} | {median['us_per_call_large']:.1f} | {median['ratio']:.2f} "
            f"| {median['rss_growth_mib']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--markdown", help="render this JSON file (written by --json) and exit")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.markdown:
        print(render(json.loads(Path(args.markdown).read_text())))
        return 0
    rows = measure()
    print(render(rows))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
