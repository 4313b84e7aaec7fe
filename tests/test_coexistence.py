"""A backend never takes the process from PyTorch's own accelerator implicitly.

PyTorch serves one accelerator type per process and prefers a registered
PrivateUse1 device (pytorch/pytorch#161129). Where torch is a CUDA build and
NVML reports a device, autoload must leave the process to CUDA; explicit
activation still works and warns. Without a GPU, the CUDA cases run against an
emulated NVML (tests/support/fake_nvml.c) on a CUDA build of torch (CI's compat
sessions); the backward case needs a real GPU and runs only where CUDA works.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from conftest import run_python

from torch_backend import discover

CUDA_BUILD = torch.version.cuda is not None
needs_cuda_build = pytest.mark.skipif(not CUDA_BUILD, reason="a CUDA build of torch (CI: compat sessions)")


@pytest.fixture(scope="module")
def emulated_nvml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding an emulated libnvidia-ml.so.1, for LD_LIBRARY_PATH."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    folder = tmp_path_factory.mktemp("nvml")
    source = Path(__file__).parent / "support" / "fake_nvml.c"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(folder / "libnvidia-ml.so.1"), str(source)], check=True)
    return folder


def nvml_env(folder: Path, count: int, log: Path, **extra: str) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(folder), os.environ.get("LD_LIBRARY_PATH")]))
    return {"LD_LIBRARY_PATH": path, "FAKE_NVML_DEVICE_COUNT": str(count), "FAKE_NVML_LOG": str(log), **extra}


STATE = (
    "import torch, torch_backend\n"
    "active = torch_backend.active_backend()\n"
    "print(active.name if active else None, torch.cuda.is_initialized())\n"
)


@needs_cuda_build
def test_autoload_leaves_a_usable_cuda_alone_without_initialising_it(emulated_nvml, tmp_path):
    log = tmp_path / "nvml.log"
    out = run_python(STATE, env=nvml_env(emulated_nvml, 1, log))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["None", "False"]  # no backend; CUDA not initialised (fork-safe)
    assert "nvmlDeviceGetCount_v2" in log.read_text()  # the decision came from NVML
    assert "torch-backend" not in out.stderr  # quietly: CUDA users see nothing


@needs_cuda_build
def test_no_visible_cuda_device_keeps_automatic_activation(emulated_nvml, tmp_path):
    for env in ({"FAKE_NVML_DEVICE_COUNT": "0"}, {"CUDA_VISIBLE_DEVICES": ""}):
        out = run_python(STATE, env={**nvml_env(emulated_nvml, 1, tmp_path / "log"), **env})
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["fake", "False"], env


@needs_cuda_build
@pytest.mark.parametrize("how", ["environment", "activate()"])
def test_explicit_activation_beside_cuda_warns_what_it_breaks(emulated_nvml, tmp_path, how):
    code = (
        "import warnings; warnings.simplefilter('always')\n"
        "import torch, torch_backend\n"
        + ("torch_backend.activate('fake')\n" if how == "activate()" else "")
        + "print(torch_backend.active_backend().name, torch.ones(2, device='fake').sum().item())\n"
    )
    env = nvml_env(emulated_nvml, 2, tmp_path / "log")
    env.update({"TORCH_BACKEND": "fake"} if how == "environment" else {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    out = run_python(code, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["fake", "2.0"]
    assert "PyTorch's own accelerator 'cuda' is usable (2 visible devices (counted by NVML))" in out.stderr
    assert "backward through 'cuda' tensors fails" in out.stderr
    assert out.stderr.count("torch-backend: 'fake' is active") == 1


TRITON_DRIVERS = """
import json, torch, triton.backends
import torch._inductor.compile_fx  # Inductor loads: core registers fake's Triton backend
from torch._inductor.runtime import triton_helpers
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import make_backend
# How Inductor's kernels pick Triton's driver (set_driver_to_gpu): the first active backend.
is_active = getattr(triton_helpers, "_is_backend_active", lambda name, backend: backend.driver.is_active())
print(json.dumps({
    "cuda": torch.cuda.is_available(),
    "active": [name for name, backend in triton.backends.backends.items() if is_active(name, backend)],
    "cuda_compiler": type(make_backend(GPUTarget("cuda", 90, 32))).__name__,
    "fake_compiler": type(make_backend(GPUTarget("fake", 90, 32))).__name__,
}))
"""


@needs_cuda_build
def test_cuda_compile_keeps_nvidias_triton_beside_a_backend_with_a_triton_target(emulated_nvml, tmp_path):
    pytest.importorskip("triton")
    # NVML counts a GPU and torch.cuda asks NVML (no CUDA driver here); fake, forced active, declares a Triton target.
    env = nvml_env(emulated_nvml, 1, tmp_path / "log", TORCH_BACKEND="fake", PYTORCH_NVML_BASED_CUDA_CHECK="1")
    out = run_python(TRITON_DRIVERS, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["cuda"] is True
    # NVIDIA's driver comes first for CUDA's kernels; fake's backend is listed after it.
    assert got["active"][0] == "nvidia" and got["active"][-1] == "fake"
    assert got["cuda_compiler"] == "CUDABackend" and got["fake_compiler"] == "FakeCUDABackend"


@needs_cuda_build
def test_report_explains_why_no_backend_is_active(emulated_nvml, tmp_path):
    out = subprocess.run(
        [os.sys.executable, "-m", "torch_backend"],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            **{k: v for k, v in os.environ.items() if k != "TORCH_BACKEND"},
            **nvml_env(emulated_nvml, 1, tmp_path / "l"),
        },
    )
    assert out.returncode == 0, out.stderr
    assert "PyTorch's own accelerator: cuda, usable: 1 visible device (counted by NVML)" in out.stdout
    assert "active: none (PyTorch's own 'cuda' is usable" in out.stdout
    # The report offers the backend automatic selection would take: fake, or gpu where a GPU is at hand.
    first = next(info.name for info in discover() if info.available)
    assert f"set TORCH_BACKEND={first} to activate '{first}' anyway" in out.stdout


@needs_cuda_build
def test_cuda_build_without_a_driver_activates_as_before():
    # This machine's CUDA build with no NVIDIA driver: NVML cannot load.
    if subprocess.run(["sh", "-c", "ldconfig -p | grep -q libnvidia-ml.so.1"]).returncode == 0:
        pytest.skip("an NVIDIA driver is installed here")
    out = run_python(STATE + "import torch_backend.__main__ as m; print(m.report())")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "fake False"
    assert "cuda, not usable here: no NVIDIA driver (NVML could not be loaded or initialised)" in out.stdout


@pytest.mark.skipif(CUDA_BUILD, reason="the CPU-build case")
def test_cpu_build_behaviour_is_unchanged():
    out = run_python(STATE + "import torch_backend.__main__ as m; print(m.report())")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "fake False"
    assert "PyTorch's own accelerator: none (a CPU-only build of torch)" in out.stdout
    assert "warning" not in out.stderr.lower()


def _cuda_works() -> bool:
    if not CUDA_BUILD:
        return False
    probe = run_python("import torch; print(torch.cuda.is_available())", env={"TORCH_BACKEND": "none"})
    return probe.stdout.strip() == "True"


@pytest.mark.skipif(not _cuda_works(), reason="needs a CUDA GPU (runs on the GPU machines)")
def test_cuda_training_works_with_backends_installed():
    code = (
        "import torch, torch_backend\n"
        "assert torch_backend.active_backend() is None\n"
        "x = torch.randn(4, 4, device='cuda', requires_grad=True)\n"
        "(x * 2).sum().backward()\n"
        "assert torch.equal(x.grad, torch.full_like(x, 2.0))\n"
        "print('ok')\n"
    )
    out = run_python(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
