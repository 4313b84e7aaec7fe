"""Hatch plugin: ``[tool.hatch.build.hooks.torch-backend]`` in a backend's pyproject.toml.

Installed with torch-backend-core (entry point group ``hatch``), so a backend
package in any repository builds its C++ the same way as the ones in this
monorepo, without a copied build script.
"""

from __future__ import annotations

from hatchling.plugin import hookimpl

from torch_backend._build.cmake_build_hook import CMakeBuildHook


@hookimpl
def hatch_register_build_hook() -> type[CMakeBuildHook]:
    return CMakeBuildHook
