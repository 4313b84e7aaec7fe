"""Hatch build hook: the CMake build logic lives once, in the repo's shared/."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "shared" / "hatch"))

from cmake_build_hook import CMakeBuildHook


def get_build_hook() -> type[CMakeBuildHook]:
    return CMakeBuildHook
