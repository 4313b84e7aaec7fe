"""docs/device-module.md lists every public name of the generated `torch.<device>` module and no other."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from torch_backend import active_backend

DOC = Path(__file__).resolve().parents[1] / "docs" / "device-module.md"


def test_the_page_lists_exactly_the_modules_public_names():
    backend = active_backend()
    if backend is None:
        pytest.skip("no backend is active (TORCH_BACKEND names one; CI runs this on fake)")
    module = getattr(torch, backend.name)
    public = {name for name in dir(module) if not name.startswith("_")}
    table = DOC.read_text().split("| --- | --- | --- |", 1)[1]
    rows = [row for row in table.splitlines() if row.startswith("| ")]
    listed = {name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[1])}
    assert listed == public, (
        f"missing from the page: {sorted(public - listed)}; not in the module: {sorted(listed - public)}"
    )
