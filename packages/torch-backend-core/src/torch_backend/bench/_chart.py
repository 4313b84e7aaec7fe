"""Charts of benchmark ratios (matplotlib, optional)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def plot(results: Sequence[Any], path: Path, xlabel: str) -> bool:
    """Bar chart of ``results`` (``case``, ``ratio``, ``spread``, ``target``, ``met``) with targets."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no chart (pip install matplotlib)")
        return False
    ratios = list(results)
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(ratios) + 1.5))
    names = [r.case for r in ratios]
    ax.barh(names, [r.ratio for r in ratios], xerr=[r.spread / 2 for r in ratios],
            color=["tab:green" if r.met else "tab:red" for r in ratios])  # fmt: skip
    ax.scatter([r.target for r in ratios], names, marker="|", s=300, color="black", label="target", zorder=3)
    ax.axvline(1.0, color="gray", linewidth=0.8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True
