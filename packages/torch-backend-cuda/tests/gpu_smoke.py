"""Smoke test of the `gpu` backend on real NVIDIA hardware (no GPU in CI).

    python packages/torch-backend-cuda/tests/gpu_smoke.py

Activates the backend explicitly (works with TORCH_DEVICE_BACKEND_AUTOLOAD=0
and without installed entry points), then checks tensors, the copy fallback,
streams, events, pinned copies, the allocator and a training step against the
CPU. Exits non-zero on the first failed check.
"""

from __future__ import annotations

import time

import torch

import torch_backend._activation as activation
import torch_backend_cuda


def check(ok: bool, what: str) -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {what}", flush=True)
    if not ok:
        raise SystemExit(1)


def main() -> None:
    if activation.active_backend() is None:
        activation.activate_backend(torch_backend_cuda.backend)
    gpu = torch.gpu
    check(gpu.is_available() and gpu.device_count() >= 1, f"{gpu.device_count()} device(s): {gpu.get_device_name(0)}")
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    da, db = a.to("gpu"), b.to("gpu")
    check(da.device.type == "gpu" and torch.equal(da.cpu(), a), "round trip H2D/D2H")
    check(torch.allclose((da @ db).cpu(), a @ b, atol=1e-4), "matmul via the copy fallback")
    check(torch.allclose((da.sin() + db * 2).cpu(), a.sin() + b * 2, atol=1e-6), "element-wise ops")
    v = da[:, 1::2]
    check(v.untyped_storage().data_ptr() == da.untyped_storage().data_ptr(), "views share device memory")

    big = torch.randn((64 << 20) // 4).pin_memory()
    s = gpu.Stream()
    start, end = gpu.Event(enable_timing=True), gpu.Event(enable_timing=True)
    with gpu.stream(s):
        start.record()
        t0 = time.perf_counter()
        dst = big.to("gpu", non_blocking=True)
        end.record()
    end.synchronize()
    wall = time.perf_counter() - t0
    check(torch.equal(dst.cpu(), big), f"H2D of 64 MiB (pinned: {big.is_pinned()}): {wall * 1e3:.2f} ms wall")
    check(start.elapsed_time(end) >= 0, f"event timing: {start.elapsed_time(end):.3f} ms")
    before = gpu.memory_allocated()
    x = torch.empty(10 << 20, device="gpu")
    allocated = gpu.memory_allocated()
    check(allocated >= before + (40 << 20), f"allocator stats: {allocated >> 20} MiB allocated")
    del x
    gpu.empty_cache()

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    ref = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    ref.load_state_dict(model.state_dict())
    model.to("gpu")
    x, y = torch.randn(16, 32), torch.randint(0, 4, (16,))
    for m, dev in ((model, "gpu"), (ref, "cpu")):
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        for _ in range(3):
            loss = torch.nn.functional.cross_entropy(m(x.to(dev)), y.to(dev))
            opt.zero_grad()
            loss.backward()
            opt.step()
    pairs = zip(model.parameters(), ref.parameters(), strict=True)
    err = max((p.detach().cpu() - q).abs().max().item() for p, q in pairs)
    check(err < 1e-4, f"3 SGD steps match the CPU (max difference {err:.1e})")

    import torch.distributed as dist

    dist.init_process_group("staged_gloo", store=dist.HashStore(), rank=0, world_size=1)
    t = torch.full((1 << 20,), 3.0, device="gpu")
    t0 = time.perf_counter()
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    ms = (time.perf_counter() - t0) * 1e3
    check(torch.equal(t.cpu(), torch.full((1 << 20,), 3.0)), f"staged all_reduce through pinned buffers ({ms:.1f} ms)")
    dist.destroy_process_group()
    print("gpu smoke: all checks passed")


if __name__ == "__main__":
    main()
