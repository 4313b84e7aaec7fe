"""torch.compile's Triton kernels on fake, without a GPU.

fake declares a Triton target (NVIDIA's compiler, sm_80) whose kernels run only
under Triton's interpreter. So: training steps compiled with default options
run Inductor's Triton kernels in the interpreter, in host and in discrete
memory, and match CPU eager; then every kernel of that run compiles to sm_80
and sm_90 cubins through fake's Triton backend (Triton's bundled ptxas, no
GPU). Triton reads TRITON_INTERPRET once, at import: each case is a process of
its own (triton_worker.py), and its exit status is asserted.

Runs in the host-memory session only (it starts the discrete processes itself).
Needs triton (CI pins the release torch asks for).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("triton", reason="torch.compile's Triton kernels need triton (pip install triton)")
if os.environ.get("TORCH_BACKEND_FAKE_DISCRETE") == "1" or os.environ.get("TORCH_BACKEND_FAKE_KERNELS") == "1":
    pytest.skip("the host-memory session runs these (they start each memory mode's processes)", allow_module_level=True)

WORKER = Path(__file__).with_name("triton_worker.py")
MEMORY = {"host": {"TORCH_BACKEND_FAKE_DISCRETE": "0"}, "discrete": {"TORCH_BACKEND_FAKE_DISCRETE": "1"}}


# Inductor compiling in the process itself, for tests about what it compiles rather than how: starting
# its pool of compile workers costs about 4 s a process. The training fixture compiles with the pool,
# as users' processes do.
IN_PROCESS = {"TORCHINDUCTOR_COMPILE_THREADS": "1"}


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=900,
        env=os.environ | {"TORCH_BACKEND": "fake"} | env,
    )  # fmt: skip


def worker(cache: Path, *args: str, **env: str) -> Any:
    caches = {"TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"), "TRITON_CACHE_DIR": str(cache / "triton")}
    out = run(str(WORKER), *args, **caches, **env)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.splitlines()[-1])


@pytest.fixture(scope="module", params=list(MEMORY))
def interpreted_training(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    cache = tmp_path_factory.mktemp(f"triton-{request.param}")
    return request.param, cache, worker(cache, "train", TRITON_INTERPRET="1", **MEMORY[request.param])


def test_training_steps_run_triton_kernels_and_match_cpu(interpreted_training: tuple) -> None:
    # The worker asserted losses and parameters against CPU eager (exit status 0).
    memory, _, results = interpreted_training
    assert set(results) == {"mlp", "cnn", "transformer"}
    for name, result in results.items():
        code = result["code"]
        # Triton kernels for the device, launched on its current stream inside its device guard.
        assert "@triton.jit" in code, f"{name} ({memory}): no Triton kernel generated"
        assert "DeviceProperties(type='fake'" in code
        assert "from torch_backend._compile.codegen import raw_stream as get_raw_stream" in code
        assert "with torch.fake.device(0):" in code
        assert "stream=stream0" in code or "stream=raw_stream0" in code
        assert "cpp_fused" not in code  # no C++ kernel: Triton comes first


def test_generated_kernels_compile_to_sm80_and_sm90_cubins(interpreted_training: tuple) -> None:
    memory, cache, _ = interpreted_training
    if memory != "host":
        pytest.skip("the same kernels: compiled once, from the host-memory run")
    out = worker(cache, "cubins", "80", "90")
    assert out["sources"] >= 10  # kernels of three models' forward, backward and optimizer
    for arch in ("80", "90"):
        binaries = out["compiled"][arch]
        assert len(binaries) == out["sources"]  # every kernel (in its first configuration)
        assert {tuple(binary["target"]) for binary in binaries} == {("fake", int(arch))}
        assert all(binary["elf"] and binary["ptx_target"] for binary in binaries)


CACHED_PROGRAM = """
import json, torch
from torch._dynamo.utils import counters
from torch._inductor.utils import run_and_get_code
x = torch.arange(8.0, device='fake')
f = lambda t: (torch.nn.functional.gelu(t).cos() + OFFSET).sum()
result, code = run_and_get_code(torch.compile(f), x)
hits = counters["inductor"]["fxgraph_cache_hit"]
# The compile backend named after the device picks the same code generator.
named = torch.compile(f, backend="fake")(x)
print(json.dumps({"result": result.item(), "named": named.item(), "triton": "@triton.jit" in "".join(code),
                  "hits": hits}))
"""


def test_cached_kernels_are_never_reused_for_another_code_generator_or_memory() -> None:
    # One Inductor cache, shared by processes that generate different code for fake: Inductor's default one,
    # with a constant of this run's own in the code (new to the cache; a private cache would redo Inductor's
    # C++ toolchain checks, 15 s).
    offset = 2 + secrets.randbelow(1_000_000)
    program = CACHED_PROGRAM.replace("OFFSET", str(offset))
    cache = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "1", **IN_PROCESS}
    kinds = {
        "triton, host memory": ({"TRITON_INTERPRET": "1", **MEMORY["host"]}, True),
        "triton, discrete memory": ({"TRITON_INTERPRET": "1", **MEMORY["discrete"]}, True),
        "C++ kernels, host memory": ({"TRITON_INTERPRET": "0", **MEMORY["host"]}, False),
    }
    expected = (torch.nn.functional.gelu(torch.arange(8.0)).cos() + offset).sum().item()
    # First every kind (nothing cached for it, whatever the others left), then one again (its own entry).
    runs = [("first", kind) for kind in kinds] + [("again", "triton, discrete memory")]
    for attempt, kind in runs:
        env, triton = kinds[kind]
        out = run("-c", program, **cache, **env)
        assert out.returncode == 0, f"{kind}: {out.stderr[-3000:]}"
        got = json.loads(out.stdout.splitlines()[-1])
        assert got["result"] == pytest.approx(expected, rel=1e-5), kind
        assert got["named"] == pytest.approx(expected, rel=1e-5), kind
        assert got["triton"] is triton, kind
        assert got["hits"] == (0 if attempt == "first" else 1), f"{kind} ({attempt})"


REGISTRATION = """
import json, torch, triton.backends
import torch._inductor.compile_fx  # Inductor loads: core registers fake's Triton backend
from torch._dynamo.device_interface import get_interface_for_device
from torch._inductor.runtime import triton_helpers
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import make_backend
# How Inductor's kernels pick Triton's driver (set_driver_to_gpu): the first active backend.
is_active = getattr(triton_helpers, "_is_backend_active", lambda name, backend: backend.driver.is_active())
interface = get_interface_for_device('fake')
target = triton.backends.backends['fake'].driver().get_current_target()
print(json.dumps({
    "backends": list(triton.backends.backends),
    "active": [name for name, b in triton.backends.backends.items() if is_active(name, b)],
    "fake_compiler": type(make_backend(GPUTarget('fake', 90, 32))).__name__,
    "cuda_compiler": type(make_backend(GPUTarget('cuda', 90, 32))).__name__,
    "triton_capable": interface.is_triton_capable(),
    "capability": interface.get_compute_capability(),
    "target": [target.backend, target.arch, target.warp_size],
}))
"""


@pytest.mark.parametrize("interpreted", [True, False], ids=["interpreted", "not-interpreted"])
def test_the_device_has_a_triton_backend_of_its_own(interpreted: bool) -> None:
    out = run("-c", REGISTRATION, TRITON_INTERPRET="1" if interpreted else "0")
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.splitlines()[-1])
    # Listed after the vendors' backends, so a usable vendor device keeps its driver.
    assert got["backends"][-1] == "fake" and "nvidia" in got["backends"]
    assert got["active"] == ["fake"]  # no NVIDIA device here
    # NVIDIA's compiler for fake's targets, NVIDIA's own untouched for CUDA's.
    assert got["fake_compiler"] == "FakeCUDABackend" and got["cuda_compiler"] == "CUDABackend"
    # Kernels are generated only where they can run (interpreter_only); compiling works everywhere.
    assert got["triton_capable"] is interpreted
    assert got["capability"] == (80 if interpreted else 10)
    assert got["target"] == ["fake", 80, 32]


# One kernel compiled for fake's target and for CUDA's, of the same architecture, into one Triton cache.
SHARED_CACHE_PROGRAM = """
import json, os, triton, triton.language as tl
import torch._inductor.compile_fx  # Inductor loads: core registers fake's Triton backend
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n) + 1, mask=i < n)

source = ASTSource(add_one, {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, constexprs={"BLOCK": 128})
targets = [triton.compile(source, target=GPUTarget(name, 80, 32)).metadata.target.backend for name in ("fake", "cuda")]
print(json.dumps({"targets": targets, "entries": len(os.listdir(os.environ["TRITON_CACHE_DIR"]))}))
"""


def test_triton_cache_keeps_the_devices_kernels_apart_from_the_vendors(tmp_path: Path) -> None:
    # With the vendor compiler's cache key alone, the CUDA compile found the kernel the device's compile
    # had cached and loaded it with the device's target: on an H200, compiled CUDA steps in a process
    # beside one that had compiled for gpu failed with "0 compatible backends for target (gpu)".
    program = tmp_path / "shared_cache.py"  # a file: triton.jit reads the kernel's source
    program.write_text(SHARED_CACHE_PROGRAM)
    out = run(str(program), TRITON_INTERPRET="0", TRITON_CACHE_DIR=str(tmp_path / "triton"))
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert got == {"targets": ["fake", "cuda"], "entries": 2}


# NVIDIA's driver made active, as on a GPU machine where the gpu backend runs beside a usable CUDA.
VENDOR_ACTIVE_PROGRAM = """
import json, torch, triton.backends
triton.backends.backends["nvidia"].driver.is_active = classmethod(lambda cls: True)
x = torch.arange(8.0)
got = torch.compile(lambda t: t.sin() * 2 + 1)(x.to("fake")).cpu()
torch.testing.assert_close(got, x.sin() * 2 + 1)
from triton.runtime import driver
print(json.dumps({"active_driver": type(driver.active).__name__}))
"""


def test_compiling_works_where_the_vendors_driver_is_active_too() -> None:
    # Triton's default driver is the one active driver: with two (the vendor's and the device's)
    # it refuses to choose, which stopped every compiled step of the gpu backend on an H100.
    out = run("-c", VENDOR_ACTIVE_PROGRAM, TRITON_INTERPRET="1")
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.splitlines()[-1])["active_driver"] == "FakeCudaDriver"


def test_cpp_wrapper_is_refused_clearly() -> None:
    program = (
        "import torch\n"
        "x = torch.randn(8, device='fake')\n"
        "torch.compile(lambda t: t.sin() + 1, options={'cpp_wrapper': True})(x)\n"
    )
    out = run("-c", program, TRITON_INTERPRET="1")
    assert out.returncode == 1
    assert "Inductor's C++ wrapper (cpp_wrapper=True) is not available for Triton kernels on 'fake'" in out.stderr
