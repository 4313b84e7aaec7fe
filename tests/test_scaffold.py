"""`python -m torch_backend new NAME` and the kit's runner, as a backend author meets them.

The scaffold's build, install and conformance run happen in `nox -s wheels` (ci/check_wheels.py),
in a fresh virtualenv with core's wheel, outside the source tree.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_guide import header_methods

from torch_backend._scaffold import files


def new(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "torch_backend", "new", *args], capture_output=True, text=True, cwd=cwd
    )


def test_writes_a_package_with_device_file_registration_build_and_kit_test(tmp_path: Path):
    out = new("toy", "--dest", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    root = tmp_path / "torch-backend-toy"
    written = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert written == [
        "CMakeLists.txt",
        "README.md",
        "csrc/ToyDevice.cpp",
        "csrc/ToyKernels.cpp",
        "pyproject.toml",
        "src/torch_backend_toy/__init__.py",
        "tests/test_conformance.py",
    ]
    pyproject = (root / "pyproject.toml").read_text()
    assert 'toy = "torch_backend_toy:backend"' in pyproject
    assert "[tool.hatch.build.hooks.torch-backend]" in pyproject
    assert "libtorch_backend_toy.so" in (root / "src/torch_backend_toy/__init__.py").read_text()
    assert '"torch_backend.testing", "toy"' in (root / "tests/test_conformance.py").read_text()
    assert "$" not in "".join((root / name).read_text() for name in written), "a template placeholder was left"


def test_device_file_implements_every_required_method_and_names_the_runtime_call():
    device = files("toy")["csrc/ToyDevice.cpp"]
    required, optional = header_methods()
    defined = set(re.findall(r"^\s+(?:Status|std::string|bool|torch_backend::Capabilities) (\w+)\(", device, re.M))
    assert required <= defined, f"missing: {sorted(required - defined)}"
    assert defined <= required | optional
    # Each method body starts with the CUDA / ACL call that replaces it (the guide's promise).
    for name in required - {"error_text", "is_out_of_memory"}:
        body = device.split(f" {name}(", 1)[1].split("\n  }", 1)[0]
        assert re.search(r"// cuda\w+", body), f"{name} does not name its runtime call"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Toy", "invalid backend name 'Toy'"),
        ("9lives", "invalid backend name '9lives'"),
        ("my-dev", "invalid backend name 'my-dev'"),
        ("class", "invalid backend name 'class'"),
        ("cuda", "PyTorch already has a 'cuda' device type"),
    ],
)
def test_bad_names_are_refused_with_the_reason(tmp_path: Path, name: str, message: str):
    out = new(name, "--dest", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 2 and message in out.stderr
    assert not any(tmp_path.iterdir())


def test_an_existing_package_is_never_overwritten(tmp_path: Path):
    assert new("toy", "--dest", str(tmp_path), cwd=tmp_path).returncode == 0
    device = tmp_path / "torch-backend-toy" / "csrc" / "ToyDevice.cpp"
    device.write_text("// my work")
    out = new("toy", "--dest", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 2 and "already exists" in out.stderr
    assert device.read_text() == "// my work"


def test_kit_runner_refuses_a_backend_that_is_not_installed(tmp_path: Path):
    out = subprocess.run(
        [sys.executable, "-m", "torch_backend.testing", "nosuchdevice", "-q"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode != 0
    assert "the conformance kit needs TORCH_BACKEND=<name> of an available backend" in out.stdout + out.stderr


def test_kit_runner_refuses_a_missing_known_failures_file(tmp_path: Path):
    missing = tmp_path / "known.json"
    out = subprocess.run(
        [sys.executable, "-m", "torch_backend.testing", "fake", "--known-failures", str(missing)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and f"no known-failures file at {missing}" in out.stderr


def test_a_backends_known_failures_merge_over_cores(tmp_path: Path):
    from torch_backend.testing import DEFAULT_KNOWN_FAILURES, load_known_failures

    core = load_known_failures()
    assert core and core == json.loads(DEFAULT_KNOWN_FAILURES.read_text())
    dropped = next(iter(core))
    mine = tmp_path / "known.json"
    mine.write_text(
        json.dumps(
            {
                "my.op": "my device rounds it differently",
                dropped: None,  # one of core's that my kernels pass
                "old.op": {"reason": "fixed in ATen", "torch_below": "2.0"},
            }
        )
    )
    merged = load_known_failures(mine)
    assert merged == {
        **{op: why for op, why in core.items() if op != dropped},
        "my.op": "my device rounds it differently",
    }
    # Files merge in order: a later one may list the op again.
    again = tmp_path / "again.json"
    again.write_text(json.dumps({dropped: "fails again"}))
    assert load_known_failures(mine, again)[dropped] == "fails again"
