"""Core's C++ keeps PyTorch's own layering (c10 -> ATen -> torch): each folder of
packages/torch-backend-core/csrc includes only from the layers below it. Core's
Python modules import one another without a cycle (registration flows one way), the compile stack is
one package, and no product module imports the test kit. Inside aten: bringup -> fallback -> kernels.

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


# Inside aten: the bring-up tools (op report, launch blocking, forced fallback) at the bottom, then the
# CPU fallback, then the kernel layer; the folder's root holds the registration with ATen (activation,
# hooks, generator, autocast, metadata) and the headers all of them share.
ATEN_FOLDERS = ["bringup", "fallback", "kernels"]


def test_aten_folders_include_only_from_folders_below_them():
    aten = CSRC / "aten"
    folders = {p.relative_to(aten).parts[0] for p in aten.rglob("*") if p.is_file() and p.parent != aten}
    assert folders == set(ATEN_FOLDERS), f"aten's folders changed: {sorted(folders)}"
    bad = []
    for folder in ATEN_FOLDERS:
        allowed = ATEN_FOLDERS[: ATEN_FOLDERS.index(folder) + 1]
        for source in sorted((aten / folder).rglob("*")):
            for target in INCLUDE.findall(source.read_text()):
                resolved = (source.parent / target).resolve()
                if not resolved.exists() or aten not in resolved.parents:
                    continue
                owner = resolved.relative_to(aten).parts
                if len(owner) > 1 and owner[0] not in allowed:
                    bad.append(f"{source.relative_to(aten)} -> {'/'.join(owner)}")
                elif len(owner) == 1 and owner[0].endswith(".cpp"):
                    bad.append(f"{source.relative_to(aten)} -> {owner[0]}")
    assert not bad, f"aten folders including from a folder above them: {bad}"
    sources_at_root = {p.name for p in aten.glob("*.cpp")}
    assert not {"OpReport.cpp", "LaunchBlocking.cpp", "MinimalKernels.cpp", "RnnCells.cpp"} & sources_at_root


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


def test_product_modules_do_not_import_the_test_kit():
    # What product code needs (the host replay of an op, Triton's interpreter support) lives outside
    # torch_backend.testing, so an installed backend never depends on the kit.
    offenders = {}
    for path in PYTHON.rglob("*.py"):
        relative = path.relative_to(PYTHON)
        if relative.parts[0] in ("testing", "_scaffold"):
            continue
        kit = {name for name in _core_imports(path) if name == "torch_backend.testing" or ".testing." in f"{name}."}
        if kit:
            offenders[str(relative)] = sorted(kit)
    assert (PYTHON / "_compile" / "inductor.py").is_file(), "the compile stack moved: update this test"
    assert not offenders, f"product modules importing the test kit: {offenders}"


def test_the_compile_stack_is_one_package_imported_from_outside_only_through_its_entry_points():
    # Outside torch_backend._compile, core's product modules use only what activation, the benchmark and
    # the public names need: dynamo and inductor's registration, codegen's InductorCodegen; the rest is the
    # package's own (the kit's tests may look inside).
    entry_points = {"torch_backend._compile", "torch_backend._compile.dynamo", "torch_backend._compile.inductor",
                    "torch_backend._compile.codegen"}  # fmt: skip
    outside = {}
    for path in PYTHON.rglob("*.py"):
        relative = path.relative_to(PYTHON)
        if relative.parts[0] in ("_compile", "_scaffold", "testing"):
            continue
        used = {
            name.rsplit(".", 1)[0] if name.count(".") > 2 else name
            for name in _core_imports(path)
            if name.startswith("torch_backend._compile")
        }
        if used - entry_points:
            outside[str(relative)] = sorted(used - entry_points)
    assert not outside, f"modules reaching into the compile stack's internals: {outside}"
