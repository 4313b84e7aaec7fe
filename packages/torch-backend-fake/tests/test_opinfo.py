"""PyTorch's OpInfo database on the fake device against CPU (float32 samples, and gradients).

CI runs a deterministic subset (every SUBSET_STEP-th op by name); set
TORCH_BACKEND_OPINFO=full, or run `nox -s opinfo`, for all of them. Ops listed in
opinfo/known_failures.json must still fail (so the list stays true); every other op
must pass all its samples.
"""

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "opinfo"))

from sweep import DeviceRandomSample, check, op_names, samples

KNOWN = json.loads((Path(__file__).parent / "opinfo" / "known_failures.json").read_text())
SUBSET_STEP = 6
ALL = op_names()
SELECTED = ALL if os.environ.get("TORCH_BACKEND_OPINFO") == "full" else ALL[::SUBSET_STEP]


@pytest.mark.parametrize("key", SELECTED)
def test_op_matches_cpu(key):
    failures = []
    for _, op, sample in samples({key}):
        try:
            check(op, sample, "fake")
        except DeviceRandomSample:
            pass  # dropout masks from the device generator: reproducible, checked in check()
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
    if key in KNOWN:
        assert failures, f"{key} passes now: remove it from known_failures.json ({KNOWN[key]})"
    else:
        assert not failures, f"{key}: {len(failures)} sample(s) differ from CPU; first: {failures[0][:500]}"


def test_known_failures_name_real_ops():
    assert set(KNOWN) <= set(ALL)
