"""The `gpu` backend on an NVIDIA GPU: core's conformance kit, plus what only this backend has.

Needs a GPU (and the package built with the CUDA toolkit); elsewhere every test here skips,
saying why: the GPU machines run it, CI has none. Each check runs in a process of its own
with TORCH_BACKEND=gpu, whose exit status is asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from torch_backend import discover


def _gpu_availability() -> tuple[bool, str]:
    info = next((i for i in discover() if i.name == "gpu"), None)
    return (False, "torch-backend-cuda is not installed") if info is None else (info.available, info.reason)


AVAILABLE, REASON = _gpu_availability()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"the gpu backend is unavailable here: {REASON}")


def run(*args: str, timeout: float = 3600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = os.environ | {"TORCH_BACKEND": "gpu"} | (env or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout)


# The gpu backend's known OpInfo failures on a GPU only, merged over core's list.
KNOWN = [Path(__file__).parent / "known_failures_gpu.json"]


def test_conformance_kit_passes():
    known = [arg for path in KNOWN for arg in ("--known-failures", str(path))]
    kit = run("-m", "torch_backend.testing", "gpu", *known, "-q", "-p", "no:warnings")
    assert kit.returncode == 0, kit.stdout[-20000:] + kit.stderr[-5000:]


def test_properties_carry_the_compute_capability():
    out = run(
        "-c",
        "import torch; p = torch.gpu.get_device_properties(0); "
        "print(p.major, p.minor, p.multi_processor_count, p.warp_size, p.regs_per_multiprocessor, "
        "torch.gpu.get_device_capability(0))",
    )
    assert out.returncode == 0, out.stderr
    major, minor, processors, warp, registers, capability = out.stdout.split(maxsplit=5)
    assert int(major) >= 5 and int(processors) > 0 and int(warp) == 32 and int(registers) >= 32768
    assert capability.strip() == f"({major}, {minor})"


def test_compiled_training_runs_triton_kernels_on_gpu_streams():
    # Inductor's Triton kernels for gpu (NVIDIA's compiler, sm_XY of this GPU), launched on gpu's
    # current stream (a side stream here), against CPU eager.
    pytest.importorskip("triton")
    code = (
        "import torch\n"
        "from torch import nn\n"
        "from torch._inductor.utils import run_and_get_code\n"
        "torch.manual_seed(0)\n"
        "ref = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.LayerNorm(256), nn.Linear(256, 8))\n"
        "model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.LayerNorm(256), nn.Linear(256, 8))\n"
        "model.load_state_dict(ref.state_dict()); model.to('gpu')\n"
        "x = torch.randn(32, 64)\n"
        "def step(m, f, x):\n"
        "    loss = f(x).square().mean(); loss.backward(); return loss\n"
        "side = torch.gpu.Stream()\n"
        "with torch.gpu.stream(side):\n"
        "    loss, code = run_and_get_code(step, model, torch.compile(model), x.to('gpu'))\n"
        "side.synchronize()\n"
        "expected = step(ref, ref, x)\n"
        "assert '@triton.jit' in ''.join(code), 'no Triton kernel generated'\n"
        "torch.testing.assert_close(loss.cpu(), expected, rtol=1e-4, atol=1e-5)\n"
        "for p, q in zip(model.parameters(), ref.parameters()):\n"
        "    torch.testing.assert_close(p.grad.cpu(), q.grad, rtol=1e-3, atol=1e-4)\n"
    )
    out = run("-c", code, timeout=900)
    assert out.returncode == 0, out.stderr[-5000:]


def test_staged_all_reduce_through_pinned_buffers():
    code = (
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('staged_gloo', store=dist.HashStore(), rank=0, world_size=1)\n"
        "t = torch.full((1 << 20,), 3.0, device='gpu')\n"
        "dist.all_reduce(t, op=dist.ReduceOp.AVG)\n"
        "assert torch.equal(t.cpu(), torch.full((1 << 20,), 3.0))\n"
        "dist.destroy_process_group()\n"
    )
    out = run("-c", code)
    assert out.returncode == 0, out.stderr


def test_nccl_is_the_default_and_runs_one_rank():
    code = (
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group(store=dist.HashStore(), rank=0, world_size=1, device_id=torch.device('gpu', 0))\n"
        "assert 'gpu:gpuccl' in dist.get_backend_config(), dist.get_backend_config()\n"
        "t = torch.arange(1 << 20, dtype=torch.float32, device='gpu')\n"
        "dist.all_reduce(t, op=dist.ReduceOp.AVG)\n"
        "out = torch.empty(1 << 20, device='gpu')\n"
        "dist.all_gather_into_tensor(out, t)\n"
        "dist.broadcast(t, 0)\n"
        "dist.barrier()\n"
        "assert torch.equal(out.cpu(), torch.arange(1 << 20, dtype=torch.float32))\n"
        "dist.destroy_process_group()\n"
    )
    out = run("-c", code)
    assert out.returncode == 0, out.stderr


NCCL_TWO_RANKS = """
import sys, torch, torch.distributed as dist
from datetime import timedelta
port, rank = int(sys.argv[1]), int(sys.argv[2])
store = dist.TCPStore("127.0.0.1", port, 2, is_master=False, timeout=timedelta(seconds=120))
dist.init_process_group("gpuccl", store=store, rank=rank, world_size=2)
torch.gpu.set_device(0)
values = torch.randn(1 << 22, generator=torch.Generator().manual_seed(rank))
on_gpu, on_cpu = values.to("gpu"), values.clone()
dist.all_reduce(on_gpu)
dist.all_reduce(on_cpu)  # the group's Gloo, for CPU tensors
torch.testing.assert_close(on_gpu.cpu(), on_cpu)
dist.destroy_process_group()
"""


def _nccl_version() -> tuple[int, ...]:
    """The NCCL the package loads: the nvidia-nccl-cu13 wheel's (its RUNPATH points there)."""
    from importlib.metadata import version

    return tuple(int(part) for part in version("nvidia-nccl-cu13").split(".")[:2])


def test_nccl_two_ranks_on_one_gpu_agree_with_gloo():
    # NCCL 2.30+ runs several ranks on one GPU where this is set; earlier releases refuse
    # ("Duplicate GPU detected"), as they refuse CUDA's own ProcessGroupNCCL.
    if _nccl_version() < (2, 30):
        pytest.skip(f"NCCL {'.'.join(map(str, _nccl_version()))} refuses two ranks on one GPU (needs 2.30+)")
    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", 0, 2, is_master=True, wait_for_workers=False)
    env = os.environ | {"TORCH_BACKEND": "gpu", "NCCL_MULTI_RANK_GPU_ENABLE": "1"}
    ranks = [
        subprocess.Popen([sys.executable, "-c", NCCL_TWO_RANKS, str(store.port), str(rank)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for rank in range(2)
    ]  # fmt: skip
    for rank, proc in enumerate(ranks):
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"rank {rank}: {out[-5000:]}"


def test_cublas_matmul_matches_cpu_and_honours_tf32():
    code = (
        "import torch\n"
        "torch.manual_seed(0)\n"
        "a, b = torch.randn(256, 512), torch.randn(512, 128)\n"
        "exact = (a.double() @ b.double()).float()\n"
        "ga, gb = a.to('gpu'), b.to('gpu')\n"
        "# row-major, column-major (a transpose's storage) and mixed operands\n"
        "for x, y in ((ga, gb), (ga.t().contiguous().t(), gb), (ga, gb.t().contiguous().t())):\n"
        "    torch.testing.assert_close((x @ y).cpu(), exact, rtol=1e-4, atol=1e-4)\n"
        "p, q, c = torch.randn(3, 64, 32), torch.randn(3, 32, 16), torch.randn(16)\n"
        "want = torch.baddbmm(c, p, q, beta=0.5, alpha=2.0)\n"
        "got = torch.baddbmm(c.to('gpu'), p.to('gpu'), q.to('gpu'), beta=0.5, alpha=2.0)\n"
        "torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4)\n"
        "for dtype in (torch.bfloat16, torch.float16):\n"
        "    torch.testing.assert_close((ga.to(dtype) @ gb.to(dtype)).cpu().float(), exact, rtol=2e-2, atol=5e-1)\n"
        "ieee = (ga @ gb).cpu()\n"
        "torch.backends.cuda.matmul.allow_tf32 = True\n"
        "tf32 = (ga @ gb).cpu()\n"
        "# TF32 keeps 10 mantissa bits: further from the exact product than IEEE float32\n"
        "assert (tf32 - exact).abs().max() > 4 * (ieee - exact).abs().max()\n"
        "torch.backends.cuda.matmul.allow_tf32 = False\n"
        "assert torch.equal((ga @ gb).cpu(), ieee)\n"
    )
    out = run("-c", code)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize(("visible", "expected"), [("0", 1), ("0,99", 1), ("99", 0), ("0,0", 0), ("", 0)])
def test_cuda_visible_devices_narrows_the_count_as_cuda_does(visible: str, expected: int):
    # Counted with NVML (fork-safe), narrowed as CUDA reads the list: it ends at the first ordinal that
    # names no GPU, and a repeated one hides them all. No visible GPU: the backend is not activated.
    out = run(
        "-c",
        "import torch, torch_backend; a = torch_backend.active_backend(); print(torch.gpu.device_count() if a else 0)",
        env={"CUDA_VISIBLE_DEVICES": visible},
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) == expected
