"""The gpu backend's portable kernels without a GPU: compiled for the host and run through core's checks.

The kernels in csrc/kernels/ are written once for nvcc and the host compiler (kernels/Portable.cuh).
Here they are linked into a backend whose device memory is host memory (the one `python -m
torch_backend new` writes), so core hands them every call it would hand the GPU build: the OpInfo
sweep against CPU and the cases below (long reductions split over blocks, strided and broadcast views,
softmax along every dimension, dtype conversions) check their index arithmetic, dtype handling and
numerics. What needs a GPU (the launches, block reductions in shared memory, cuBLAS) is left to
test_gpu.py on the GPU machines.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1]
CUDA_INCLUDE = Path("/usr/local/cuda/include")


def run(args: list[str], env: dict[str, str], timeout: float = 1800) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout)
    assert out.returncode == 0, f"exited {out.returncode}:\n{out.stdout[-20000:]}\n{out.stderr[-5000:]}"
    return out


@pytest.fixture(scope="module")
def emulated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a process whose backend, `gpuemu`, runs the portable kernels on the host."""
    if not (CUDA_INCLUDE / "cuda_fp16.h").is_file():
        pytest.skip(f"no CUDA toolkit headers at {CUDA_INCLUDE} (cuda_fp16.h)")
    root = tmp_path_factory.mktemp("emulation")
    run(["-m", "torch_backend", "new", "gpuemu", "--dest", str(root)], os.environ.copy())
    project = root / "torch-backend-gpuemu"
    with open(project / "CMakeLists.txt", "a") as cmake:
        cmake.write(
            "\n# The gpu backend's portable kernels, compiled by the host compiler.\n"
            f'target_sources(torch_backend_gpuemu PRIVATE "{PACKAGE}/csrc/kernels/HostEmulation.cpp")\n'
            f'target_include_directories(torch_backend_gpuemu PRIVATE "{CUDA_INCLUDE}")\n'
        )
    site = root / "site"
    install = ["-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--target", str(site), str(project)]
    run(install, os.environ.copy())
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return os.environ | {"PYTHONPATH": path, "TORCH_BACKEND": "gpuemu"}


def test_core_sends_the_kernel_families_to_the_portable_kernels(emulated: dict[str, str]):
    table = run(["-m", "torch_backend", "ops"], emulated).stdout
    rows = {line.split()[0]: line for line in table.splitlines()[1:] if line.strip()}
    for op in ("add.Tensor", "mul.out", "where.self_out", "sum.IntList_out", "amax.out", "_softmax.out"):
        assert rows[op].rstrip().endswith("device kernel"), rows[op]
    for op in ("_log_softmax_backward_data.out", "_copy_from", "cat.out", "arange.start_out", "masked_fill_.Scalar"):
        assert rows[op].rstrip().endswith("device kernel"), rows[op]
    assert not rows["mm"].rstrip().endswith("device kernel")  # cuBLAS: GPU build only


CASES = r"""
import torch
torch.manual_seed(0)
dev = "gpuemu"

def same(got, want, **tolerance):
    torch.testing.assert_close(got.cpu(), want, **tolerance)

loose = dict(rtol=1e-4, atol=1e-3)
# One long reduction (split over blocks, combined in a second pass) and few long rows.
x = torch.randn(1 << 20)
for op in (torch.sum, torch.mean, torch.amax, torch.amin):
    same(op(x.to(dev)), op(x), **loose)
rows = torch.randn(48, 6000)
for dims in (1, 0, (0, 1)):
    same(rows.to(dev).sum(dims), rows.sum(dims), **loose)
    same(rows.to(dev).amax(dims), rows.amax(dims))
# Many short outputs, permuted and sliced inputs, keepdim, half, bfloat16, integers.
cube = torch.randn(6, 7, 9).permute(2, 0, 1)[:, 1:, ::2]
for dims in (0, 1, 2, (0, 2)):
    same(cube.to(dev).mean(dims, keepdim=True), cube.mean(dims, keepdim=True), **loose)
for dtype in (torch.half, torch.bfloat16):
    same(rows.to(dtype).to(dev).sum(1), rows.to(dtype).sum(1), rtol=2e-2, atol=2e-1)
ints = torch.randint(-100, 100, (300, 50), dtype=torch.int32)
same(ints.to(dev).sum(0), ints.sum(0))
same(ints.to(dev).amin(1), ints.amin(1))
nan = torch.tensor([1.0, float("nan"), 3.0])
assert torch.isnan(nan.to(dev).amax().cpu()) and torch.isnan(nan.to(dev).sum().cpu())

# Element-wise on strided, broadcast and scalar operands.
a = torch.randn(7, 9, 11).permute(2, 0, 1)
b = torch.randn(7, 1)
da, db = a.to(dev), b.to(dev)
same(da + db * 2, a + b * 2)
same(torch.where(da > 0, da, db), torch.where(a > 0, a, b))
same(torch.addcdiv(da, da, db.abs() + 1, value=0.5), torch.addcdiv(a, a, b.abs() + 1, value=0.5))
same(da.clamp(min=-0.5), a.clamp(min=-0.5))
same(torch.nn.functional.gelu(da, approximate="tanh"), torch.nn.functional.gelu(a, approximate="tanh"))
same(da.masked_fill(da < 0, 7.0), a.masked_fill(a < 0, 7.0))
same(torch.arange(3, 50, 4, device=dev), torch.arange(3, 50, 4))
same(torch.arange(0.5, 2.0, 0.25, device=dev), torch.arange(0.5, 2.0, 0.25))
# Conversions between every pair of a few dtypes, through the copy kernel.
source = (torch.randn(33) * 50)
for src in (torch.float32, torch.int64, torch.float16, torch.bfloat16, torch.bool):
    for dst in (torch.float64, torch.int8, torch.float16, torch.bfloat16, torch.bool):
        value = source.to(src)
        same(value.to(dev).to(dst), value.to(dst))

# softmax and log_softmax along every dimension of a permuted tensor, forward and backward.
t = torch.randn(5, 6, 7).permute(1, 2, 0)
for fn in (torch.softmax, torch.log_softmax):
    for dim in range(3):
        cpu = t.clone().requires_grad_()
        dev_t = t.to(dev).requires_grad_()
        want, got = fn(cpu, dim), fn(dev_t, dim)
        same(got, want)
        grad = torch.randn_like(want)
        want.backward(grad)
        got.backward(grad.to(dev))
        same(dev_t.grad, cpu.grad)
print("ok")
"""


def test_kernels_match_cpu_on_views_dtypes_and_long_reductions(emulated: dict[str, str]):
    assert run(["-c", CASES], emulated).stdout.strip().endswith("ok")


def test_opinfo_sweep_through_the_portable_kernels(emulated: dict[str, str]):
    # The gpu backend's known failures (core's, and cov: its sums accumulate in double).
    known = Path(__file__).parent / "known_failures.json"
    out = run(["-m", "torch_backend.testing.opinfo", "--known", str(known)], emulated).stdout
    print(out[-3000:])
