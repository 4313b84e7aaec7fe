"""Auto-compare (``torch_backend.autocompare``, ``TORCH_BACKEND_AUTOCOMPARE``): each device op checked
against the same op on a host copy as it runs.

A training step on the backend's own kernels must compare clean (no false alarm), and kernels
planted wrong (a custom op's PrivateUse1 kernel) must be caught: wrong values, NaN in the wrong
place, wrong strides, a mutated argument left unwritten.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
import torch
from torch import nn

import torch_backend
from torch_backend.testing.conformance._support import DEVICE

NAMESPACE = "autocompare_selftest"


@pytest.fixture(scope="module")
def planted() -> Iterator[object]:
    """Ops whose device kernel is wrong in one way each; CPU's is right."""
    library = torch.library.Library(NAMESPACE, "DEF")
    library.define("twice(Tensor x) -> Tensor")
    library.define("clean(Tensor x) -> Tensor")
    library.define("transposed(Tensor x) -> Tensor")
    library.define("bump_(Tensor(a!) x) -> Tensor(a!)")
    library.impl("twice", lambda x: x * 2, "CPU")
    library.impl("twice", lambda x: x + 2, "PrivateUse1")  # the wrong kernel
    library.impl("clean", lambda x: torch.nan_to_num(x, nan=0.0), "CPU")
    library.impl("clean", lambda x: x.clone(), "PrivateUse1")  # leaves NaN in place
    library.impl("transposed", lambda x: x.t().contiguous(), "CPU")
    library.impl("transposed", lambda x: x.contiguous().t().clone().t().t(), "PrivateUse1")
    library.impl("bump_", lambda x: x.add_(1), "CPU")
    library.impl("bump_", lambda x: x, "PrivateUse1")  # forgets to write
    yield getattr(torch.ops, NAMESPACE)
    library._destroy()


def test_a_training_step_on_the_backends_kernels_compares_clean() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 4)).to(DEVICE)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    x, target = torch.randn(6, 8).to(DEVICE), torch.randint(0, 4, (6,)).to(DEVICE)
    with torch_backend.autocompare(mode="log") as check:
        for _ in range(2):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), target).backward()
            optimizer.step()
    assert not check.report.mismatches, "\n\n".join(map(str, check.report.mismatches))
    compared = check.report.compared
    # Forward, backward (from autograd's threads) and the optimizer's ops were all compared.
    for op in ("addmm", "native_layer_norm", "native_layer_norm_backward", "mm"):
        assert compared[op] >= 2, (op, compared)
    assert any(op.startswith("_foreach_") for op in compared), compared


def test_a_wrong_kernel_raises_naming_the_op_its_arguments_and_the_caller(planted: object) -> None:
    x = torch.arange(12.0).reshape(3, 4).to(DEVICE)
    with pytest.raises(torch_backend.AutocompareError) as raised, torch_backend.autocompare():
        planted.twice(x)  # the line the report must name
    message = str(raised.value)
    assert message.startswith(f"auto-compare: {NAMESPACE}::twice differs from CPU: result differs"), message
    assert f"x: float32[3, 4] strides (4, 1) on {DEVICE}:0" in message, message
    assert "largest difference: 9 at index (2, 3)" in message, message
    assert "planted.twice(x)  # the line the report must name" in message, message
    assert __file__ in message, message


def test_only_ops_the_pattern_names_are_compared(planted: object) -> None:
    x = torch.ones(4).to(DEVICE)
    with torch_backend.autocompare(r"^add\.") as check:
        planted.twice(x).add(1)
    assert check.report.compared == {"add.Tensor": 1}, check.report.compared


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        ("clean", "result differs from CPU"),
        ("transposed", "result: strides (1, 3) on the device, (2, 1) on CPU"),
        ("bump_", "x (written) differs from CPU"),
    ],
)
def test_each_kind_of_mismatch_is_logged_and_the_run_goes_on(
    planted: object, op: str, expected: str, caplog: pytest.LogCaptureFixture
) -> None:
    x = torch.tensor([[1.0, float("nan"), 3.0], [4.0, 5.0, 6.0]]).to(DEVICE)
    with torch_backend.autocompare(mode="log") as check:
        getattr(planted, op)(x)
        after = x.sum()  # compared too: the run went on
    assert [m.op for m in check.report.mismatches] == [f"{NAMESPACE}::{op}"], check.report.mismatches
    assert expected in str(check.report.mismatches[0]), check.report.mismatches[0]
    assert check.report.compared["sum"] == 1 and after.device.type == DEVICE
    assert f"auto-compare: {NAMESPACE}::{op}" in caplog.text


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match=r"auto-compare pattern='\(' is not a valid regular expression"):
        torch_backend.autocompare("(")
    with pytest.raises(ValueError, match="auto-compare mode must be one of"):
        torch_backend.autocompare(mode="warn")
    with pytest.raises(ValueError, match="give rtol and atol together"):
        torch_backend.autocompare(rtol=1e-3)


SCRIPT = """
import torch
x = torch.arange(6.0).to("{device}")
y = torch.ops.aten.exp(x)
wrong = torch.library.Library("aten", "IMPL")
wrong.impl("exp", lambda t: t + 1, "PrivateUse1")
print("exp differs:", torch.ops.aten.exp(x).sum().item() != y.sum().item())
"""


def run_script(**settings: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TORCH_BACKEND": DEVICE, **settings}
    script = SCRIPT.format(device=DEVICE)
    return subprocess.run(
        [sys.executable, "-W", "ignore::UserWarning", "-c", script], env=env, capture_output=True, text=True
    )


def test_the_setting_turns_it_on_for_the_whole_process() -> None:
    raised = run_script(TORCH_BACKEND_AUTOCOMPARE="^exp$")
    assert raised.returncode == 1, raised
    assert "AutocompareError: auto-compare: exp differs from CPU" in raised.stderr, raised.stderr
    logged = run_script(TORCH_BACKEND_AUTOCOMPARE="^exp$", TORCH_BACKEND_AUTOCOMPARE_MODE="log")
    assert logged.returncode == 0, logged
    assert "exp differs: True" in logged.stdout and "auto-compare: exp differs from CPU" in logged.stderr, logged
    loose = run_script(
        TORCH_BACKEND_AUTOCOMPARE="^exp$", TORCH_BACKEND_AUTOCOMPARE_RTOL="1", TORCH_BACKEND_AUTOCOMPARE_ATOL="1"
    )
    assert loose.returncode == 0 and "auto-compare" not in loose.stderr, loose  # within the tolerance given
    bad = run_script(TORCH_BACKEND_AUTOCOMPARE="^exp$", TORCH_BACKEND_AUTOCOMPARE_MODE="warn")
    assert "TORCH_BACKEND_AUTOCOMPARE_MODE='warn': use one of raise, log" in bad.stderr, bad.stderr
