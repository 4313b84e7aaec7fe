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
import shutil
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


# Where the emulated backend is written and built: in the repository's build/ folder, not pytest's numbered
# temporary one, so that its compiler command lines are the same in every run and clone (relative to
# CCACHE_BASEDIR, the repository, in CI) and ccache serves the portable kernels' 40 s compile from the last run.
EMULATION = PACKAGE.parents[1] / "build" / "tests-gpu-emulation"


@pytest.fixture(scope="module")
def emulated() -> dict[str, str]:
    """The environment of a process whose backend, `gpuemu`, runs the portable kernels on the host."""
    if not (CUDA_INCLUDE / "cuda_fp16.h").is_file():
        pytest.skip(f"no CUDA toolkit headers at {CUDA_INCLUDE} (cuda_fp16.h)")
    root = EMULATION
    shutil.rmtree(root, ignore_errors=True)  # a fresh scaffold every run
    root.mkdir(parents=True)
    run(["-m", "torch_backend", "new", "gpuemu", "--dest", str(root)], os.environ.copy())
    project = root / "torch-backend-gpuemu"
    # The gpu backend's kernels replace the scaffold's two examples.
    (project / "csrc" / "GpuemuKernels.cpp").write_text("// The portable kernels below register every kernel.\n")
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


def test_docs_list_the_ops_on_the_portable_kernels(emulated: dict[str, str]):
    from torch_backend.testing import assert_kernel_list_documented

    env = {k: v for k, v in emulated.items() if k != "TORCH_BACKEND_FORCE_FALLBACK"}
    assert_kernel_list_documented(PACKAGE.parents[1] / "docs" / "kernels.md", "gpu-portable", env)


def test_core_sends_the_kernel_families_to_the_portable_kernels(emulated: dict[str, str]):
    table = run(["-m", "torch_backend", "ops"], emulated).stdout
    rows = {line.split()[0]: line for line in table.splitlines()[1:] if line.strip()}
    for op in ("add.Tensor", "mul.out", "where.self_out", "sum.IntList_out", "amax.out", "_softmax.out"):
        assert rows[op].rstrip().endswith("device kernel"), rows[op]
    for op in ("_log_softmax_backward_data.out", "_copy_from", "cat.out", "arange.start_out", "masked_fill_.Scalar"):
        assert rows[op].rstrip().endswith("device kernel"), rows[op]
    for op in ("nll_loss_backward", "index_add_", "gather.out", "max.dim", "std_mean.correction", "native_batch_norm"):
        assert rows[op].rstrip().endswith("device kernel"), rows[op]
    for op in (
        "native_layer_norm_backward",
        "native_dropout",
        "scatter_add_",
        "argmin.out",
        "_scaled_dot_product_fused_attention_overrideable_backward",
    ):
        assert rows[op].rstrip().endswith("device kernel"), rows[op]
    for op in ("_foreach_add_.List", "_foreach_addcdiv_.ScalarList", "_foreach_lerp_.Scalar", "_foreach_sqrt"):
        assert rows[op].rstrip().endswith("device kernel"), rows[op]  # multi-tensor kernels
    for op in ("max_pool2d_with_indices", "max_pool2d_with_indices_backward", "avg_pool2d_backward"):
        assert rows[op].rstrip().endswith("device kernel"), rows[op]  # pooling
    assert rows["_adaptive_avg_pool2d"].rstrip().endswith("device kernel"), rows["_adaptive_avg_pool2d"]
    assert not rows["mm"].rstrip().endswith("device kernel")  # cuBLAS: GPU build only
    assert not rows["convolution"].rstrip().endswith("device kernel")  # cuDNN: GPU build only


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
# Long float32 and half sums keep float64's accuracy up to the output's rounding: each group of
# vector loads folds in float, the running sums in double.
ones = 1 + torch.rand(1 << 22) * 1e-3
same(ones.to(dev).sum().double(), ones.double().sum(), rtol=1e-7, atol=0)
halves = ones[: 1 << 15].half()
same(halves.to(dev).sum().double(), halves.double().sum(), rtol=1e-3, atol=0)
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

# Rows long enough to take a block each (a language model's vocabulary), also strided.
long_rows = torch.randn(3, 5000) * 4
for fn in (torch.softmax, torch.log_softmax):
    for t in (long_rows, long_rows.t().contiguous().t()):
        cpu, dev_t = t.clone().requires_grad_(), t.to(dev).requires_grad_()
        want, got = fn(cpu, 1), fn(dev_t, 1)
        same(got, want, **loose)  # 5000 floats summed in another order
        grad = torch.randn_like(want)
        want.backward(grad)
        got.backward(grad.to(dev))
        same(dev_t.grad, cpu.grad, **loose)

# Losses, normalisation, indexing, arg-reductions, variance: forward and backward.
F = torch.nn.functional
def both(fn, *tensors):
    cpu = [t.clone().requires_grad_(t.is_floating_point()) for t in tensors]
    dev_ = [t.to(dev).requires_grad_(t.is_floating_point()) for t in tensors]
    want, got = fn(*cpu), fn(*dev_)
    same(got, want, **loose)
    grad = torch.randn_like(want)
    want.backward(grad)
    got.backward(grad.to(dev))
    for c, d in zip(cpu, dev_):
        if c.grad is not None:
            same(d.grad, c.grad, **loose)

logits, target, weight = torch.randn(6, 5), torch.tensor([0, 4, -100, 2, 2, 1]), torch.rand(5)
for reduction in ("none", "mean", "sum"):
    both(lambda x: F.nll_loss(x, target.to(x.device), weight.to(x.device), reduction=reduction), logits)
    both(lambda x: F.cross_entropy(x, target.to(x.device), reduction=reduction), logits)
# A batch of thousands of tokens (its sums spread over blocks), some ignored.
long_logits, long_target = torch.randn(5000, 7), torch.randint(0, 7, (5000,))
long_target[::9] = -100
for reduction in ("mean", "sum"):
    both(lambda x: F.cross_entropy(x, long_target.to(x.device), weight.new_ones(7).to(x.device) * 0.5,
                                   reduction=reduction), long_logits)
rows = torch.randn(4, 3, 8)
both(lambda x, w, b: F.layer_norm(x, (8,), w, b), rows, torch.randn(8), torch.randn(8))
both(lambda x: F.layer_norm(x, (3, 8)), rows)
images = torch.randn(4, 3, 5, 5)
for training in (True, False):
    running = [torch.randn(3), torch.rand(3) + 0.5]
    moved = [r.to(dev) for r in running]
    both(lambda x, w, b: F.batch_norm(x, *(moved if x.device.type == dev else running), w, b, training=training),
         images, torch.randn(3), torch.randn(3))
    same(moved[0], running[0]); same(moved[1], running[1])
# Statistics long enough that several blocks share a channel, row or column (Sums.cuh), and the
# backward of sum(): its gradient is an expanded tensor, which core copies for the kernel.
both(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), torch.randn(16, 2, 40, 40) * 3 + 5,
     torch.randn(2), torch.randn(2))
both(lambda x, w, b: F.layer_norm(x, (5000,), w, b), torch.randn(3, 5000) + 2, torch.randn(5000), torch.randn(5000))
both(lambda x, w, b: F.layer_norm(x, (6,), w, b), torch.randn(3000, 6), torch.randn(6), torch.randn(6))
for norm in (lambda x: F.batch_norm(x, None, None, training=True), lambda x: F.layer_norm(x, (5,))):
    cpu, on_dev = images.clone().requires_grad_(), images.to(dev).requires_grad_()
    norm(cpu).sum().backward()
    norm(on_dev).sum().backward()
    same(on_dev.grad, cpu.grad, **loose)
table = torch.randn(10, 4)
picks = torch.tensor([3, 3, 0, 9])
both(lambda t: t.index_select(0, picks.to(t.device)), table)
both(lambda t: t.gather(1, torch.tensor([[0, 0], [3, 1]] * 5).to(t.device)), table)
both(lambda t, s: t.index_add(0, picks.to(t.device), s, alpha=2.0), table, torch.randn(4, 4))
both(lambda t, s: t.scatter_add(1, torch.tensor([[1, 1, 2]] * 10).to(t.device), s), table, torch.randn(10, 3))
# A source larger than the index: only the part the index covers is added.
wide, spots = torch.randn(10, 5), torch.tensor([[1, 1, 2]] * 10)
same(table.to(dev).scatter_add(1, spots.to(dev), wide.to(dev)), table.scatter_add(1, spots, wide))
ints = torch.randint(0, 9, (10, 4))
same(ints.to(dev).index_select(0, picks.to(dev)), ints.index_select(0, picks))
same(ints.to(dev).scatter_add(0, picks.view(4, 1).expand(4, 4).to(dev), ints[:4].to(dev)),
     ints.scatter_add(0, picks.view(4, 1).expand(4, 4), ints[:4]))
ties = torch.tensor([[1.0, 3.0, 3.0, float("nan"), 3.0], [2.0, 2.0, 0.0, -1.0, -1.0]])
for fn in (torch.max, torch.min):
    got, want = fn(ties.to(dev), 1), fn(ties, 1)
    same(got.values, want.values, equal_nan=True); same(got.indices, want.indices)
same(cube.to(dev).argmax(2), cube.argmax(2))
for correction in (0, 1):
    want = torch.var(cube, (0, 2), correction=correction)
    same(torch.var(cube.to(dev), (0, 2), correction=correction), want, **loose)
    v, m = torch.std_mean(cube.to(dev), 1, correction=correction)
    want_v, want_m = torch.std_mean(cube, 1, correction=correction)
    same(v, want_v, **loose); same(m, want_m, **loose)
# Fused attention: plain, causal, with a boolean mask and an additive bias; the value width
# spans two feature chunks of the kernel.
q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 70)
both(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), q, k, v)
both(lambda q, k, v: F.scaled_dot_product_attention(q, k[:, :, :5], v[:, :, :5], is_causal=True), q, k, v)
keep = torch.rand(5, 7) > 0.3
keep[:, 0] = True
both(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=keep.to(q.device)), q, k, v)
both(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3), q, k, v, torch.randn(3, 5, 7))
# dropout: the device generator's stream, reproducible under manual_seed, mask and scale consistent.
ones = torch.ones(10000, device=dev)
torch.manual_seed(3); first = F.dropout(ones, 0.3)
torch.manual_seed(3); again = F.dropout(ones, 0.3)
assert torch.equal(first.cpu(), again.cpu())
kept = first.cpu() != 0
assert 0.65 < kept.float().mean().item() < 0.75
same(first.cpu()[kept], torch.full((int(kept.sum()),), 1 / 0.7))
print("ok")
"""


def test_kernels_match_cpu_on_views_dtypes_and_long_reductions(emulated: dict[str, str]):
    assert run(["-c", CASES], emulated).stdout.strip().endswith("ok")


def test_opinfo_sweep_through_the_portable_kernels(emulated: dict[str, str]):
    # The host emulation's own known failures, merged over core's list.
    known = ["--known", str(Path(__file__).parent / "known_failures_emulated.json")]
    out = run(["-m", "torch_backend.testing.opinfo", *known], emulated).stdout
    print(out[-3000:])


def test_pooling_kernels_pass_the_kits_pooling_grid_and_resnet_step(emulated: dict[str, str]):
    # Max (indices, ties, NaN), average (padding counted or not, divisor, ceil mode) and adaptive average
    # pooling, NCHW and channels-last, forward and backward against CPU; then a ResNet training step whose
    # pooling runs on these kernels (its convolutions on the fallback: cuDNN is GPU-only).
    run(["-m", "torch_backend.testing", "gpuemu", "-q", "-k", "pool or resnet"], emulated)


POOLING_CASES = r"""
import torch
F = torch.nn.functional
dev = "gpuemu"
torch.manual_seed(0)
# Half and bfloat16 (computed in float), overlapping max windows whose gradients add, a permuted view.
for dtype, tolerance in ((torch.half, 1e-2), (torch.bfloat16, 5e-2), (torch.float64, 1e-12)):
    x = torch.randn(2, 5, 13, 10).to(dtype)
    for pool in (lambda t: F.max_pool2d(t, 3, 1, 1), lambda t: F.avg_pool2d(t, (3, 2), (2, 1), (1, 0)),
                 lambda t: F.adaptive_avg_pool2d(t, (4, 7))):
        cpu, moved = x.clone().requires_grad_(), x.to(dev).requires_grad_()
        want, got = pool(cpu), pool(moved)
        torch.testing.assert_close(got.cpu(), want, rtol=tolerance, atol=tolerance)
        grad = torch.randn_like(want)
        want.backward(grad)
        got.backward(grad.to(dev))
        torch.testing.assert_close(moved.grad.cpu(), cpu.grad, rtol=tolerance, atol=tolerance)
view = torch.randn(3, 8, 9, 4).permute(0, 3, 1, 2)
torch.testing.assert_close(F.max_pool2d(view.to(dev), 2).cpu(), F.max_pool2d(view, 2))
print("ok")
"""


def test_pooling_kernels_on_half_bfloat16_double_and_views(emulated: dict[str, str]):
    assert run(["-c", POOLING_CASES], emulated).stdout.strip().endswith("ok")


def test_multi_tensor_kernels_pass_the_kits_foreach_and_optimizer_tests(emulated: dict[str, str]):
    # Every _foreach_ overload core serves, in place and functional, lists longer than one launch's
    # 36 tensors, mixed lengths and dtypes, and Adam, AdamW and SGD with foreach=True against CPU.
    run(["-m", "torch_backend.testing", "gpuemu", "-q", "-k", "foreach or scalar_operands"], emulated)


MULTI_TENSOR_CASES = r"""
import torch
dev = "gpuemu"
# 100 tensors (three launches of 36), some longer than a block's 65536-element chunk, some empty-free odd sizes.
sizes = [1, 7, 65536, 65537, 200000] * 20
cpu = [torch.randn(n, generator=torch.Generator().manual_seed(i)) for i, n in enumerate(sizes)]
other = [torch.randn(n) for n in sizes]
got = [t.to(dev) for t in cpu]
torch._foreach_addcmul_(got, [t.to(dev) for t in other], [t.to(dev) for t in other], value=0.5)
torch._foreach_addcmul_(cpu, other, other, value=0.5)
for g, w in zip(got, cpu):
    torch.testing.assert_close(g.cpu(), w)
# Views into one storage at offsets (a flattened parameter buffer).
flat = torch.randn(1000)
views = [flat[i * 100 : (i + 1) * 100] for i in range(10)]
on_device = flat.to(dev)
device_views = [on_device[i * 100 : (i + 1) * 100] for i in range(10)]
torch._foreach_mul_(device_views, [float(i) for i in range(10)])
torch._foreach_mul_(views, [float(i) for i in range(10)])
torch.testing.assert_close(on_device.cpu(), flat)
print("ok")
"""


def test_multi_tensor_kernels_split_long_lists_and_honour_offsets(emulated: dict[str, str]):
    assert run(["-c", MULTI_TENSOR_CASES], emulated).stdout.strip().endswith("ok")
