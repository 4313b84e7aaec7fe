"""Where ops ran: ``with torch_backend.op_report() as report:`` and ``python -m torch_backend ops --run``.

While a report is open core counts, per ATen overload, the calls its device kernels served and
those the CPU fallback served (zero-copy on host-addressable memory, copying elsewhere), the bytes
the copying fallback moved and the host time the fallbacks took. Closed, counting costs one
relaxed atomic load per op. One report at a time per process.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class OpCount:
    """One ATen overload ("add.Tensor") and where its calls ran."""

    op: str
    device_calls: int
    zero_copy_calls: int
    copying_calls: int
    bytes_copied: int
    host_seconds: float  # in the fallbacks
    family: str = ""  # the kernel family of core's op table, if the op is in it
    forced: bool = False  # TORCH_BACKEND_FORCE_FALLBACK keeps it off its kernel

    @property
    def fallback_calls(self) -> int:
        return self.zero_copy_calls + self.copying_calls


@dataclass
class OpReport:
    """The counts of one ``op_report()`` block, filled when the block ends; most costly first."""

    rows: list[OpCount] = field(default_factory=list)

    def __getitem__(self, op: str) -> OpCount:
        for row in self.rows:
            if row.op == op:
                return row
        raise KeyError(op)

    def __contains__(self, op: object) -> bool:
        return any(row.op == op for row in self.rows)

    def table(self) -> str:
        device = sum(r.device_calls for r in self.rows)
        fallback = sum(r.fallback_calls for r in self.rows)
        lines = [
            f"{len(self.rows)} ops, {device} calls on device kernels, {fallback} on the CPU fallback "
            f"({_size(sum(r.bytes_copied for r in self.rows))} copied, "
            f"{sum(r.host_seconds for r in self.rows) * 1e3:.1f} ms on the host)",
            f"{'op':<40}{'device':>8}{'zero-copy':>10}{'copying':>9}{'copied':>11}{'host ms':>9}  note",
        ]
        for r in self.rows:
            note = "forced onto the fallback" if r.forced else (r.family if r.device_calls else "")
            lines.append(
                f"{r.op:<40}{r.device_calls:>8}{r.zero_copy_calls:>10}{r.copying_calls:>9}"
                f"{_size(r.bytes_copied):>11}{r.host_seconds * 1e3:>9.2f}  {note}".rstrip()
            )
        return "\n".join(lines)

    def to_json(self) -> str:
        """The rows as a JSON list of objects (OpCount's fields)."""
        return json.dumps([asdict(r) for r in self.rows], indent=1)


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if count < 1024 or unit == "MiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return ""


def _rows(raw: list[tuple[str, int, int, int, int, int]]) -> list[OpCount]:
    from torch_backend import _C

    table = {op: (family, forced) for op, family, _kernel, _on_device, forced in _C._op_table()}
    rows = [
        OpCount(op, device, zero_copy, copying, copied, ns / 1e9, *table.get(op, ("", False)))
        for op, device, zero_copy, copying, copied, ns in raw
    ]
    # Most costly first: host time in the fallbacks, then fallback calls, then device calls.
    return sorted(rows, key=lambda r: (-r.host_seconds, -r.fallback_calls, -r.device_calls, r.op))


@contextmanager
def op_report() -> Iterator[OpReport]:
    """Counts where every op of the block runs on the active backend; the report fills when the block ends."""
    import torch  # noqa: F401  (activates the backend)

    from torch_backend import _C, active_backend

    if active_backend() is None:
        raise RuntimeError("torch_backend.op_report(): no backend is active")
    report = OpReport()
    _C._open_op_report()
    try:
        yield report
    finally:
        report.rows = _rows(_C._close_op_report())
