"""PyTorch's OpInfo database on the device against CPU (float32 samples, and gradients).

A deterministic subset (every SUBSET_STEP-th op by name); TORCH_BACKEND_OPINFO=full
runs all of them (`python -m torch_backend.testing.opinfo` is the faster full sweep,
with pass rates). Ops in the backend's known-failures file (the runner's
--known-failures, core's list by default) must still fail, so the list stays true; every other op must pass
all its samples.
"""

import os

import pytest

from torch_backend.testing import DEFAULT_KNOWN_FAILURES, KNOWN_FAILURES_ENV, load_known_failures
from torch_backend.testing.conformance._support import DEVICE
from torch_backend.testing.opinfo import DeviceRandomSample, check, op_names, samples

# The runner's --known-failures files, joined by os.pathsep.
KNOWN = load_known_failures(*os.environ.get(KNOWN_FAILURES_ENV, str(DEFAULT_KNOWN_FAILURES)).split(os.pathsep))
SUBSET_STEP = 6
ALL = op_names()
SELECTED = ALL if os.environ.get("TORCH_BACKEND_OPINFO") == "full" else ALL[::SUBSET_STEP]


@pytest.mark.parametrize("key", SELECTED)
def test_op_matches_cpu(key):
    failures = []
    for _, op, sample in samples({key}):
        try:
            check(op, sample, DEVICE)
        except DeviceRandomSample:
            pass  # dropout masks from the device generator: reproducible, checked in check()
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
    if key in KNOWN:
        assert failures, f"{key} passes now: remove it from the known failures ({KNOWN[key]})"
    else:
        assert not failures, f"{key}: {len(failures)} sample(s) differ from CPU; first: {failures[0][:500]}"


def test_known_failures_name_real_ops():
    assert set(KNOWN) <= set(ALL)
