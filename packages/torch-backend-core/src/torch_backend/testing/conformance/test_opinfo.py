"""PyTorch's OpInfo database on the device against CPU (float32 samples, and gradients).

A deterministic subset (every SUBSET_STEP-th op by name); TORCH_BACKEND_OPINFO=full
runs all of them (`python -m torch_backend.testing.opinfo` is the faster full sweep,
with pass rates). Ops in the backend's known failures (core's list, with the runner's
--known-failures files merged over it) must still fail, so the list stays true; every other op must pass
all its samples.
"""

import os
import warnings

import pytest
import torch

from torch_backend.testing import DEFAULT_KNOWN_FAILURES, KNOWN_FAILURES_ENV, load_known_failures
from torch_backend.testing.conformance._support import DEVICE
from torch_backend.testing.opinfo import DeviceRandomSample, _no_less_accurate, check, op_names, samples, sweep

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


def test_the_sweep_leaves_the_callers_warning_filters_as_they_were():
    # The sweep silences the samples' warnings while it runs; a filter left behind would hide
    # every later warning of the process that ran it.
    before = list(warnings.filters)
    results = sweep(DEVICE, {"abs"})
    assert results["abs"]["passed"] > 0
    assert warnings.filters == before


def _off_by_roundings(values: torch.Tensor, index: int, roundings: int) -> torch.Tensor:
    """`values` with one element moved `roundings` float32 steps up."""
    moved = values.clone()
    for _ in range(roundings):
        moved[index] = torch.nextafter(moved[index], torch.tensor(float("inf")))
    return moved


def test_a_result_off_cpus_but_as_accurate_passes_and_a_less_accurate_one_does_not():
    exact = torch.full((8,), 165.0, dtype=torch.float64) + torch.arange(8, dtype=torch.float64) / 3
    cpu = _off_by_roundings(exact.float(), 2, 20)  # CPU's BLAS rounds one element 20 steps off
    device = _off_by_roundings(exact.float(), 5, 20)  # the device another, as far
    with pytest.raises(AssertionError):  # beyond float32's tolerance of each other
        torch.testing.assert_close(device, cpu)
    assert _no_less_accurate(device, cpu, lambda: exact)
    assert not _no_less_accurate(_off_by_roundings(exact.float(), 5, 100), cpu, lambda: exact)
    # A float64 result that is not this computation's (CPU's float32 far from it) is no reference.
    assert not _no_less_accurate(device, cpu, lambda: exact + 1)
    # Nor are results of another shape, or with NaN where CPU has a number.
    assert not _no_less_accurate(device[:4], cpu, lambda: exact)
    assert not _no_less_accurate(torch.where(torch.arange(8) == 0, float("nan"), device), cpu, lambda: exact)
