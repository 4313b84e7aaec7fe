"""The backend author's guide lists exactly the device symbols `DeviceRuntime.h` declares."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER = ROOT / "packages" / "torch-backend-core" / "include" / "torch_backend" / "DeviceRuntime.h"
GUIDE = ROOT / "docs" / "writing-a-backend.md"


def header_methods() -> tuple[set[str], set[str]]:
    """(required, optional) virtual methods of DeviceRuntime, destructor aside."""
    body = HEADER.read_text().split("class TORCH_BACKEND_API DeviceRuntime", 1)[1].split("\n};", 1)[0]
    body = re.sub(r"//[^\n]*", "", body)
    required, optional = set(), set()
    for declaration in re.findall(r"virtual\s+[^;]*;", body):
        name = re.search(r"(~?\w+)\s*\(", declaration).group(1)
        if name.startswith("~"):
            continue
        (required if re.search(r"\)\s*=\s*0\s*;$", declaration) else optional).add(name)
    return required, optional


def guide_methods() -> tuple[set[str], set[str]]:
    """The names under the guide's `// required` and `// optional` comments."""
    block = GUIDE.read_text().split("class MyRuntime final", 1)[1].split("};", 1)[0]
    lists: dict[str, set[str]] = {"required": set(), "optional": set()}
    current = None
    for line in block.splitlines():
        text = line.strip().removeprefix("//").strip()
        heading = re.match(r"(required|optional)\b", text)
        if heading:
            current = heading.group(1)
            continue
        if current is not None:
            text = text.split(":", 1)[-1]
            lists[current] |= {name for name in re.findall(r"\w+", text)}
    return lists["required"], lists["optional"]


def test_header_parses_to_the_known_core_of_the_interface():
    required, optional = header_methods()
    assert {"malloc", "memcpy_async", "event_elapsed_time", "is_out_of_memory"} <= required
    assert {"stream_sleep", "capabilities"} <= optional
    assert not required & optional


def test_guide_lists_every_method_of_the_header_and_no_other():
    assert guide_methods() == header_methods()
