"""Hatchling build hook of every torch-backend package (core's own included).

Backends use it as the ``torch-backend`` hatch plugin that torch-backend-core
installs (``[tool.hatch.build.hooks.torch-backend]``); core, which cannot
depend on itself, loads this file from its source tree (its hatch_build.py).

It configures, builds and installs the package's CMakeLists.txt with Ninja
(and ccache when present), then hands the installed files to hatchling:

* wheels: installed into a staging folder and force-included under the import
  package, so the wheel is self-contained ($ORIGIN-relative RUNPATHs);
* editable installs: installed straight into ``src/<package>/`` (git-ignored),
  where the editable ``.pth`` finds them.

A package without a CMakeLists.txt is pure Python and passes through.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


def _package_dir(name: str) -> str | None:
    """Folder of an importable package, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(iter(spec.submodule_search_locations))


# Written into every built package: the torch it was compiled against, which
# core checks before loading it (torch_backend/_compat.py reads it).
BUILD_INFO = "_build_info.json"


def _build_tag(torch_version: str) -> str:
    """torch's release and Python's, e.g. torch2.11.0-py312: what a build folder is kept for."""
    return f"torch{torch_version}-py{sys.version_info.major}{sys.version_info.minor}"


def _torch_version() -> str:
    """The installed torch's release ("2.13.0"), read without importing torch."""
    try:
        return importlib.metadata.version("torch").split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError("torch must be installed first: build with --no-build-isolation") from None


def _run(cmd: list[str], cwd: Path) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=cwd, check=True)


class CMakeBuildHook(BuildHookInterface):
    PLUGIN_NAME = "torch-backend"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        if not (root / "CMakeLists.txt").exists():
            return
        package = self.config["package"]
        editable = version == "editable"
        torch_version = _torch_version()
        # Build folders are kept per torch release and Python: objects compiled
        # against one torch's headers never mix with another's, and CMake's
        # cache, which holds the Python it found, is not reused by another.
        build_dir = root / "build" / f"{'editable' if editable else 'wheel'}-{_build_tag(torch_version)}"
        if editable:
            prefix = root / "src" / package
        else:
            prefix = build_dir / "staging"
            shutil.rmtree(prefix, ignore_errors=True)

        extra = []
        if package != "torch_backend":
            core_config = Path(self._core_prefix(root)) / "share" / "cmake" / "TorchBackendCore"
            extra.append(f"-DTorchBackendCore_DIR={core_config}")
        _run(self._configure_command(root, build_dir, extra), root)
        _run(["cmake", "--build", str(build_dir)], root)
        _run(["cmake", "--install", str(build_dir), "--prefix", str(prefix)], root)
        (prefix / BUILD_INFO).write_text(json.dumps({"torch": torch_version}) + "\n")

        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if not editable:
            build_data["force_include"][str(prefix)] = package
            # Source builds accept any supported torch; a built wheel fits only
            # the torch release it was compiled against.
            major, minor = torch_version.split(".")[:2]
            build_data["dependencies"].append(f"torch=={major}.{minor}.*")

    @staticmethod
    def _configure_command(source: Path, build_dir: Path, extra: list[str]) -> list[str]:
        torch_root = _package_dir("torch")
        if torch_root is None:
            raise RuntimeError("torch must be installed first: build with --no-build-isolation")
        # ccache when present, for every package this hook builds (core's own
        # CMakeLists.txt sets it too; backends build through core's CMake package).
        ccache = shutil.which("ccache")
        return [
            "cmake", "-S", str(source), "-B", str(build_dir), "-G", "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DTORCH_ROOT={torch_root}",
            *([f"-DCMAKE_CXX_COMPILER_LAUNCHER={ccache}"] if ccache else []),
            *extra,
        ]  # fmt: skip

    def _core_prefix(self, root: Path) -> str:
        """Where find_package(TorchBackendCore) looks for a backend package.

        An installed torch-backend-core is preferred. When pip builds core and a
        backend in one command, core is not installed yet: then the sibling
        core source in this monorepo is built and staged (ccache makes the
        second compile of the same sources cheap). The backend links core by
        SONAME, so at run time it binds to whichever core Python imported.
        """
        installed = _package_dir("torch_backend")
        if installed is not None and (Path(installed) / "share" / "cmake").is_dir():
            return installed
        core_source = root.parent / "torch-backend-core"
        if not (core_source / "CMakeLists.txt").exists():
            raise RuntimeError("torch-backend-core is not installed: pip install torch-backend-core first")
        tag = _build_tag(_torch_version())
        staged = root / "build" / f"core-prefix-{tag}"
        core_build = root / "build" / f"core-{tag}"
        _run(self._configure_command(core_source, core_build, []), root)
        _run(["cmake", "--build", str(core_build)], root)
        _run(["cmake", "--install", str(core_build), "--prefix", str(staged)], root)
        return str(staged)
