"""Figures the docs state, rendered from the data that holds them: ``python ci/docs_facts.py [--check]``.

Each fact has a source (the JSON a benchmark or a GPU run wrote) and a place (a page, between
``<!-- NAME-start -->`` and ``<!-- NAME-end -->``). Without arguments the blocks are rewritten from
their sources; ``--check`` exits 1 naming each block whose text is stale (tests/test_guide.py runs the
check, so CI fails on a figure typed by hand or left behind by new data).

- ``gpu-ratios`` in README.md: every GPU run's gpu / CUDA ratios (``docs/bench/gpu-*/**/gpu-vs-cuda.json``,
  written by ``gpu_checks.sh``), each with its target and whether it was met.
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


#: block name -> (page, renderer)
BLOCKS: dict[str, tuple[str, Callable[[Path], str]]] = {"gpu-ratios": ("README.md", render_gpu_ratios)}


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
