"""Core's C++ keeps PyTorch's own layering (c10 -> ATen -> torch): each folder of
packages/torch-backend-core/csrc includes only from the layers below it. Core's
Python modules import one another without a cycle (registration flows one way).

    runtime      c10 and the device-symbol interface: devices, streams, guard, host sync
    memory       + the caching device and pinned host allocators
    aten         + ATen and torch/library.h: kernels, fallback, autocast, generator, hooks, activation
    graphs       + ATen's graph interface: capture and replay over the runtime's capture symbols
    profiler     + PyTorch's profiler and Kineto's interface: device activity for torch.profiler
    distributed  + c10d
    python       + pybind11 and Python
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

CSRC = Path(__file__).resolve().parents[1] / "packages" / "torch-backend-core" / "csrc"
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.MULTILINE)

LAYERS = ["runtime", "memory", "aten", "graphs", "profiler", "distributed", "python"]
# Public headers (include/torch_backend/) by the layer that implements them.
PUBLIC_HEADER_LAYER = {
    "DeviceRuntime.h": "runtime",
    "Export.h": "runtime",
    "Runtime.h": "runtime",
    "Allocator.h": "memory",
    "HostAccess.h": "aten",
    "Generator.h": "aten",
    "Kernels.h": "aten",
    "DType.h": "runtime",
    "DeviceKernels.h": "runtime",
    "DeviceCollectives.h": "runtime",
    "Activate.h": "aten",
    "TensorMetadata.h": "aten",
}
# What a layer may include from PyTorch, beyond c10 and the standard library.
TORCH_ALLOWED = {
    "runtime": (),
    # PyTorch's own host-allocator base lives in ATen/core, as ours builds on it.
    "memory": ("ATen/core/CachingHostAllocator.h",),
    # torch/headeronly sits below c10 (c10 includes it): the version macros
    # TorchCompat.h reads.
    "aten": ("ATen/", "torch/library.h", "torch/headeronly/version.h"),
    # Kineto's headers are included by their own names, as PyTorch does.
    "profiler": (
        "ATen/",
        "torch/library.h",
        "torch/csrc/profiler/",
        "ActivityType.h",
        "IActivityProfiler.h",
        "libkineto.h",
        "output_base.h",
    ),
    "graphs": ("ATen/",),
    "distributed": ("ATen/", "torch/library.h", "torch/csrc/distributed/"),
    "python": ("ATen/", "torch/", "pybind11/", "Python.h"),
}


def layer_of_local(including: Path, target: str) -> str | None:
    resolved = (including.parent / target).resolve()
    try:
        return resolved.relative_to(CSRC).parts[0]
    except ValueError:
        return None


def violations(source: Path) -> list[str]:
    layer = source.relative_to(CSRC).parts[0]
    below = LAYERS[: LAYERS.index(layer) + 1]
    found = []
    for target in INCLUDE.findall(source.read_text()):
        if target.startswith("torch_backend/"):
            owner = PUBLIC_HEADER_LAYER.get(target.removeprefix("torch_backend/"))
            if owner not in below:
                found.append(f"{target} (layer {owner})")
        elif target.startswith(("ATen/", "torch/", "pybind11/", "Python.h")):
            if not target.startswith(TORCH_ALLOWED[layer]):
                found.append(target)
        elif "/" in target or (target.endswith(".h") and (source.parent / target).exists()):
            owner = layer_of_local(source, target)
            if owner is not None and owner not in below:
                found.append(f"{target} (layer {owner})")
    return found


def test_every_source_file_is_in_a_layer():
    folders = {p.relative_to(CSRC).parts[0] for p in CSRC.rglob("*") if p.is_file()}
    assert folders <= set(LAYERS), f"files outside the layer folders: {sorted(folders - set(LAYERS))}"


def test_public_headers_are_all_assigned_a_layer():
    headers = {p.name for p in (CSRC.parent / "include" / "torch_backend").glob("*.h")}
    assert headers == set(PUBLIC_HEADER_LAYER), sorted(headers ^ set(PUBLIC_HEADER_LAYER))


def test_no_layer_includes_from_a_layer_above_it():
    bad = {
        str(p.relative_to(CSRC)): v
        for p in sorted(CSRC.rglob("*"))
        if p.suffix in (".h", ".cpp") and (v := violations(p))
    }
    assert not bad, f"includes from a higher layer: {bad}"


# What tests torch's version, in C++ (torch's macros, ours) and in Python (the
# installed release, core's helpers).
VERSION_CHECK = re.compile(
    r"TORCH_VERSION_(MAJOR|MINOR)|TORCH_BACKEND_TORCH_BEFORE|torch_at_least|torch_release\(|torch\.__version__\s*[<>=]"
)
# The one file per language where torch releases may differ (and the CMake
# file that picks the C++ standard).
COMPAT_FILES = {"torch-backend-core/csrc/aten/TorchCompat.h", "torch-backend-core/src/torch_backend/_compat.py"}


def test_version_checks_live_only_in_the_compat_files():
    packages = CSRC.parents[1]
    sources = [p for p in packages.rglob("*") if p.suffix in (".h", ".cpp", ".cu", ".py") and "build" not in p.parts]
    found = {str(p.relative_to(packages)) for p in sources if VERSION_CHECK.search(p.read_text(errors="replace"))}
    assert found >= COMPAT_FILES, "the pattern no longer sees the compat files' own checks"
    assert found == COMPAT_FILES, (
        f"torch version checks outside TorchCompat.h and _compat.py: {sorted(found - COMPAT_FILES)}"
    )


PYTHON = CSRC.parent / "src" / "torch_backend"


def _core_imports(path: Path) -> set[str]:
    """The torch_backend modules ``path`` imports, wherever in the file (deferred imports count)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.startswith("torch_backend.")}


def test_core_python_modules_import_without_a_cycle():
    modules = {}
    for path in PYTHON.rglob("*.py"):
        if "_scaffold" in path.parts or "conformance" in path.parts:
            continue  # templates and tests, not core's modules
        parts = path.relative_to(PYTHON.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    # A package's __init__ holds names its modules share and re-exports theirs: a module's import of a
    # package it belongs to is not an edge of the graph.
    graph = {
        name: {
            imported
            for imported in _core_imports(path)
            if imported in modules and imported != name and not name.startswith(f"{imported}.")
        }
        for name, path in modules.items()
    }
    assert len(graph) > 20 and graph["torch_backend._activation"], "the import graph was not read"
    cycles = []

    def visit(module: str, stack: list[str]) -> None:
        for imported in sorted(graph[module]):
            if imported in stack:
                cycles.append([*stack[stack.index(imported) :], imported])
            elif len(stack) < 12:
                visit(imported, [*stack, imported])

    for module in sorted(graph):
        visit(module, [module])
    assert not cycles, f"import cycles among core's Python modules: {sorted({' -> '.join(c) for c in cycles})}"
