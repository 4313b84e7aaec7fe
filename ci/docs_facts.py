"""Figures the docs state, rendered from the data that holds them: ``python ci/docs_facts.py [--check]``.

Each fact has a source (the JSON a benchmark or a GPU run wrote) and a place (a page, between
``<!-- NAME-start -->`` and ``<!-- NAME-end -->``). Without arguments the blocks are rewritten from
their sources; ``--check`` exits 1 naming each block whose text is stale (tests/test_guide.py runs the
check, so CI fails on a figure typed by hand or left behind by new data).

- ``gpu-ratios`` in README.md: every GPU run's gpu / CUDA ratios (``docs/bench/gpu-*/**/gpu-vs-cuda.json``,
  written by ``gpu_checks.sh``), each with its target and whether it was met.
- ``allreduce-runs`` in docs/user-guide.md: ``bench.allreduce --runs 5`` in host and discrete memory
  (``docs/bench/allreduce-runs-{host,discrete}.json``).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def gpu_runs(root: Path = ROOT) -> list[tuple[str, str, dict]]:
    """(date, run folder relative to docs/bench, its gpu-vs-cuda JSON) for every GPU run, oldest first."""
    runs = []
    for path in sorted((root / "docs" / "bench").glob("gpu-*/**/gpu-vs-cuda.json")):
        folder = path.parent.relative_to(root / "docs" / "bench")
        date = re.match(r"gpu-(\d{4}-\d{2}-\d{2})", folder.parts[0]).group(1)
        runs.append((date, str(folder), json.loads(path.read_text())))
    return runs


def judged(result: dict) -> str:
    target = result.get("target")
    if target is None or (isinstance(target, float) and math.isnan(target)):
        return "no target"
    return f"<= {target:g}: {'met' if result.get('met') else '**missed**'}"


def render_gpu_ratios(root: Path = ROOT) -> str:
    lines = [
        "| run | GPU | torch | case | gpu / CUDA | target |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for date, folder, run in gpu_runs(root):
        for result in run["results"]:
            lines.append(
                f"| {date} (`{folder}`) | {run['machine']} | {run['torch']} | {result['case']} "
                f"| {result['ratio']:.2f} | {judged(result)} |"
            )
    return "\n".join(lines)


def render_allreduce_runs(root: Path = ROOT) -> str:
    """bench.allreduce --runs N in each memory mode: per path the medians over the runs (the ratio with its
    lowest and highest), and the native path's targets."""
    import statistics

    lines = [
        "| tensors (2 ranks) | runs | 64 MiB | bus bandwidth | vs CPU (lowest - highest) | 8 bytes | loop, per call |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for mode in ("host", "discrete"):
        runs = json.loads((root / "docs" / "bench" / f"allreduce-runs-{mode}.json").read_text())["runs"]
        for index, row in enumerate(runs[0]):

            def median(key: str, index: int = index, runs: list = runs) -> float:
                return statistics.median(run[index][key] for run in runs)

            ratios = [run[index]["ratio"] for run in runs]
            spread = "" if row["tensors"].startswith("cpu") else f" ({min(ratios):.2f} - {max(ratios):.2f})"
            name = row["tensors"] if mode == "host" else f"discrete memory: {row['tensors']}"
            lines.append(
                f"| {name} | {len(runs)} | {median('seconds') * 1e3:.1f} ms | {median('bus_gbps'):.2f} GB/s "
                f"| {statistics.median(ratios):.2f}{spread} | {median('latency_us'):.0f} us "
                f"| {median('sync_loop_us'):.0f} us |"
            )
    return "\n".join(lines)


#: block name -> (page, renderer)
BLOCKS: dict[str, tuple[str, Callable[[Path], str]]] = {
    "gpu-ratios": ("README.md", render_gpu_ratios),
    "allreduce-runs": ("docs/user-guide.md", render_allreduce_runs),
}


def block_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {name}-start -->\n)(.*?)(<!-- {name}-end -->)", re.S)


def stale_blocks(root: Path = ROOT) -> list[str]:
    """The blocks whose text differs from what their sources render."""
    stale = []
    for name, (page, render) in BLOCKS.items():
        found = block_pattern(name).search((root / page).read_text())
        if found is None or found.group(2) != render(root) + "\n":
            stale.append(f"{page}: {name}")
    return stale


def write_blocks(root: Path = ROOT) -> None:
    for name, (page, render) in BLOCKS.items():
        path = root / page
        text = render(root) + "\n"
        new, count = block_pattern(name).subn(lambda m, text=text: m.group(1) + text + m.group(3), path.read_text())
        if count != 1:
            raise SystemExit(f"{page}: no <!-- {name}-start --> ... <!-- {name}-end --> block")
        path.write_text(new)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a block is stale; write nothing")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_blocks()
        for block in stale:
            print(f"stale: {block} (python ci/docs_facts.py rewrites it)")
        return 1 if stale else 0
    write_blocks()
    return 0


if __name__ == "__main__":
    sys.exit(main())
