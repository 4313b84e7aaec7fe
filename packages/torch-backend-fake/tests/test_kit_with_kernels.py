"""The kit's files whose tests differ with device kernels, again with fake's kernels on.

CI's first pass runs fake without device kernels (zero-copy fallback), its second
with kernels and discrete memory: these reruns cover kernels on host-addressable
memory, in the first pass.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kernels_rerun import rerun_with_kernels

import torch_backend.testing

KIT = Path(torch_backend.testing.__file__).parent / "conformance"


@pytest.mark.skipif(os.environ.get("TORCH_BACKEND_FAKE_KERNELS") == "1", reason="kernels are on in this pass")
def test_profiler_with_kernels_in_this_memory_mode() -> None:
    rerun_with_kernels(str(KIT / "test_profiler.py"))


@pytest.mark.skipif(os.environ.get("TORCH_BACKEND_FAKE_KERNELS") == "1", reason="kernels are on in this pass")
def test_real_models_with_kernels_in_this_memory_mode() -> None:
    pytest.importorskip("transformers")
    rerun_with_kernels(str(KIT / "test_real_models.py"))
