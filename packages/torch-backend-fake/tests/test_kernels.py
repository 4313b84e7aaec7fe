"""fake's device kernels behind core's kernel layer (torch_backend/DeviceKernels.h): which ops run on them,
and every family but the element-wise one (test_kernels_elementwise.py): reductions, matrix multiplies,
softmax, losses, copies and indexing, normalisation, dropout, training steps.

Runs in `nox -s tests-fake-discrete`, which sets TORCH_BACKEND_FAKE_KERNELS=1
(with discrete memory, the path npu and gpu take); without kernels this module
fails at once rather than passing vacuously (kernel_checks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from kernel_checks import assert_runs_on_kernels_alone, on_fake, same

from torch_backend import _C

FAMILIES = ["elementwise", "reduction", "gemm", "softmax", "loss", "indexing", "norm", "random"]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_op_of_the_family_runs_on_device_kernels(family: str):
    rows = {op: on_device for op, fam, _, on_device, _ in _C._op_table() if fam == family}
    assert rows and all(rows.values()), rows
    op = {
        "elementwise": "mul.Tensor",
        "reduction": "sum.dim_IntList",
        "gemm": "mm",
        "softmax": "_softmax",
        "indexing": "gather",
        "norm": "native_batch_norm",
        "random": "native_dropout",
    }.get(family, "nll_loss_forward")
    table = torch._C._dispatch_dump_table(f"aten::{op}")
    line = next(line for line in table.splitlines() if line.startswith("PrivateUse1"))
    assert "Activate.cpp" in line, line  # the kernel layer's registration, not the fallback's


def test_ops_report_lists_the_device_kernels():
    out = subprocess.run(
        [sys.executable, "-m", "torch_backend", "ops"], capture_output=True, text=True, timeout=120, check=True
    )
    assert "mul.out" in out.stdout and "device kernel" in out.stdout, out.stdout


FORCED = (
    "import torch\n"
    "x = torch.arange(6.0, device='fake'); y = torch.full((6,), 2.0, device='fake')\n"
    "print((x + y).sum().item())\n"
    "try:\n"
    "    print((x * y).sum().item())\n"
    "except NotImplementedError as e:\n"
    "    print('fallback:', str(e).split(chr(39))[1])\n"
)


def test_forced_fallback_keeps_matching_overloads_off_their_kernels():
    # With the fallback forbidden (TORCH_BACKEND_FALLBACK=error), an op that runs on the fallback raises naming
    # itself: mul runs on its kernel, until TORCH_BACKEND_FORCE_FALLBACK sends it to the fallback; add stays.
    env = {**os.environ, "TORCH_BACKEND_FALLBACK": "error"}
    run = [sys.executable, "-c", FORCED]
    kernel = subprocess.run(run, capture_output=True, text=True, env=env, timeout=120)
    assert kernel.returncode == 0 and kernel.stdout.split() == ["27.0", "30.0"], kernel.stdout + kernel.stderr
    forced_env = env | {"TORCH_BACKEND_FORCE_FALLBACK": r"^mul[._]"}
    forced = subprocess.run(run, capture_output=True, text=True, env=forced_env, timeout=120)
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.splitlines() == ["27.0", "fallback: aten::mul.out"], forced.stdout
    table = subprocess.run(
        [sys.executable, "-m", "torch_backend", "ops"], capture_output=True, text=True, env=forced_env, timeout=120
    )
    rows = {line.split()[0]: line for line in table.stdout.splitlines()[1:] if line.startswith("  ")}
    for op in ("mul.Tensor", "mul.out", "mul_.Tensor"):
        assert rows[op].rstrip().endswith("CPU fallback (forced)"), rows[op]
    assert rows["add.out"].rstrip().endswith("device kernel")
    assert "3 forced onto the CPU fallback (TORCH_BACKEND_FORCE_FALLBACK)" in table.stdout.splitlines()[0]
    # A bad expression is a clear error at activation (a warning at `import torch`), never a crash.
    bad_env = env | {"TORCH_BACKEND_FORCE_FALLBACK": "mul("}
    bad = subprocess.run(
        [sys.executable, "-c", "import torch"], capture_output=True, text=True, env=bad_env, timeout=120
    )
    assert bad.returncode == 0, bad.stderr
    assert "TORCH_BACKEND_FORCE_FALLBACK='mul(' is not a valid regular expression" in bad.stderr, bad.stderr


@pytest.mark.parametrize(
    ("dim", "keepdim"), [(None, False), (0, False), (1, True), ((0, 2), False), (-1, True)], ids=str
)
@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin"])
def test_reductions_match_cpu(name: str, dim, keepdim: bool):
    op = getattr(torch, name)
    x = torch.randn(3, 4, 5)
    kwargs = {} if dim is None and name in ("sum", "mean") else {"dim": () if dim is None else dim, "keepdim": keepdim}
    same(op(x.to("fake"), **kwargs), op(x, **kwargs))
    view = x.transpose(0, 2)[1:, ::2]  # non-contiguous, offset
    device_view = x.to("fake").transpose(0, 2)[1:, ::2]
    same(op(device_view, **kwargs), op(view, **kwargs))


@pytest.mark.parametrize(
    ("dim", "keepdim"), [(None, False), (0, False), (1, True), ((0, 2), False), (-1, True)], ids=str
)
@pytest.mark.parametrize("correction", [0, 1, 2.5])
@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
def test_variance_matches_cpu(name: str, dim, keepdim: bool, correction):
    def op(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
        result = getattr(torch, name)(t, dim=dim, keepdim=keepdim, correction=correction)
        return result if isinstance(result, tuple) else (result,)

    x = torch.randn(3, 4, 5) * 3 + 1
    view = x.transpose(0, 2)[1:, ::2]  # non-contiguous, offset
    for device_input, cpu_input in ((x.to("fake"), x), (x.to("fake").transpose(0, 2)[1:, ::2], view)):
        for device_result, cpu_result in zip(op(device_input), op(cpu_input), strict=True):
            same(device_result, cpu_result)


def test_variance_runs_on_the_kernel_with_out_resize_and_gradients():
    # In a process where any fallback is an error: these calls are the kernel's.
    code = (
        "import torch\n"
        "x = torch.randn(6, 5, dtype=torch.float64)\n"
        "d = x.to('fake')\n"
        "out = torch.empty(0, dtype=torch.float64, device='fake')\n"
        "torch.var(d, 1, out=out)\n"
        "assert out.shape == (6,) and torch.allclose(out.cpu(), x.var(1))\n"
        "v, m = torch.var_mean(d, (0, 1), correction=0)\n"
        "assert torch.allclose(v.cpu(), x.var(correction=0)) and torch.allclose(m.cpu(), x.mean())\n"
        "s = torch.std(d.half(), 0)\n"
        "assert s.dtype == torch.float16 and torch.allclose(s.cpu(), x.half().std(0), atol=1e-2)\n"
        "print('ok')\n"
    )
    assert_runs_on_kernels_alone(code)
    # Autograd's var/std backward formulas run on the device too.
    x = torch.randn(4, 6, requires_grad=True)
    d = x.detach().to("fake").requires_grad_()
    (torch.std(d, 1) * torch.arange(4.0).to("fake")).sum().backward()
    (torch.std(x, 1) * torch.arange(4.0)).sum().backward()
    same(d.grad, x.grad)


def test_variance_edge_cases_answer_as_cpu():
    x = torch.randn(5, 3)
    with pytest.warns(UserWarning, match="degrees of freedom"):
        same(torch.var(x[:1].to("fake"), 0), torch.var(x[:1], 0))  # one element, correction 1: nan
    same(torch.var(torch.zeros(0, 3, device="fake"), 0), torch.var(torch.zeros(0, 3), 0))
    same(torch.var(torch.tensor(2.5, device="fake"), correction=0), torch.tensor(0.0))
    same(torch.var(x.to("fake"), dim=[]), torch.var(x, dim=[]))
    with pytest.raises(RuntimeError, match="floating point"):
        torch.var(torch.ones(3, dtype=torch.int64, device="fake"))
    out = torch.empty(3, dtype=torch.float64, device="fake")  # another dtype: ATen's own answer
    cpu_out = torch.empty(3, dtype=torch.float64)
    same(torch.var(x.to("fake"), 0, out=out), torch.var(x, 0, out=cpu_out))


def test_reduction_dtypes_empty_and_out():
    ints = torch.randint(-5, 5, (4, 6), dtype=torch.int32)
    result = ints.to("fake").sum(1)
    assert result.dtype == torch.int64
    same(result, ints.sum(1))
    halves = torch.randn(64, 8).half()
    same(halves.to("fake").sum(0), halves.sum(0))
    same(halves.to("fake").sum(0, dtype=torch.float32), halves.sum(0, dtype=torch.float32))
    same(torch.zeros(0, 3, device="fake").sum(0), torch.zeros(3))
    same(torch.zeros(0, 3, device="fake").mean(0), torch.zeros(0, 3).mean(0))
    same(torch.tensor(2.5, device="fake").sum(), torch.tensor(2.5))
    out = torch.empty(0, device="fake")
    x = torch.randn(5, 7)
    torch.sum(x.to("fake"), 1, out=out)
    same(out, x.sum(1))
    with pytest.raises((RuntimeError, IndexError), match=r"[Ee]xpected reduction dim|empty"):
        torch.zeros(0, 3, device="fake").amax(0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_matrix_multiplies_match_cpu(dtype):
    tol = {"atol": 1e-2, "rtol": 1e-2} if dtype in (torch.bfloat16, torch.float16) else {}

    def close(device_result, cpu_result):
        assert device_result.device.type == "fake"
        torch.testing.assert_close(device_result.cpu(), cpu_result, **tol)

    a, b, bias = torch.randn(5, 7, dtype=dtype), torch.randn(7, 3, dtype=dtype), torch.randn(3, dtype=dtype)
    fa, fb, fbias = on_fake(a, b, bias)
    close(fa @ fb, a @ b)
    close(fb.t() @ fa.t(), b.t() @ a.t())  # transposed operands: strides only
    close(torch.addmm(fbias, fa, fb, beta=0.5, alpha=2), torch.addmm(bias, a, b, beta=0.5, alpha=2))
    close(torch.nn.functional.linear(fa, fb.t(), fbias), torch.nn.functional.linear(a, b.t(), bias))
    batch_a, batch_b = torch.randn(4, 5, 7, dtype=dtype), torch.randn(7, 3, dtype=dtype)
    close(batch_a.to("fake") @ batch_b.to("fake"), batch_a @ batch_b)  # matmul broadcasts b
    c = torch.randn(4, 5, 3, dtype=dtype)
    bb = torch.randn(4, 7, 3, dtype=dtype)
    close(
        torch.baddbmm(c.to("fake"), batch_a.to("fake"), bb.to("fake"), beta=0.25),
        torch.baddbmm(c, batch_a, bb, beta=0.25),
    )


def test_matrix_multiply_in_place_out_and_edge_shapes():
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    acc = torch.randn(5, 3)
    fa, fb, facc = on_fake(a, b, acc)
    facc.addmm_(fa, fb, alpha=0.5)
    same(facc, acc.addmm_(a, b, alpha=0.5))
    nan_self = torch.full((5, 3), float("nan"))
    same(torch.addmm(nan_self.to("fake"), fa, fb, beta=0), torch.addmm(nan_self, a, b, beta=0))
    out = torch.empty(0, device="fake")
    torch.mm(fa, fb, out=out)
    same(out, a @ b)
    same(torch.zeros(5, 0, device="fake") @ torch.zeros(0, 3, device="fake"), torch.zeros(5, 3))
    same(torch.zeros(0, 4, device="fake") @ torch.zeros(4, 3, device="fake"), torch.zeros(0, 3))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        fa @ fa
    ints = torch.randint(0, 5, (3, 4))
    same(ints.to("fake") @ ints.t().to("fake"), ints @ ints.t())  # declined: the fallback runs it


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_forward_and_backward_match_cpu(log: bool, dim: int):
    fn = torch.log_softmax if log else torch.softmax
    x = torch.randn(4, 6, 5).transpose(0, 2)[:, 1:]  # non-contiguous, offset
    grad = torch.randn(x.shape)
    cpu = x.clone().requires_grad_()
    fn(cpu, dim).backward(grad)
    dev = x.to("fake").requires_grad_()
    result = fn(dev, dim)
    result.backward(grad.to("fake"))
    same(result.detach(), fn(x, dim))
    same(dev.grad, cpu.grad)
    same(fn(torch.tensor(3.0, device="fake"), 0), fn(torch.tensor(3.0), 0))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_cross_entropy_forward_and_backward_match_cpu(reduction: str, weighted: bool):
    logits = torch.randn(6, 4)
    target = torch.tensor([0, 3, -100, 2, 1, 3])
    weight = torch.rand(4) + 0.5 if weighted else None
    kwargs = {"reduction": reduction, "weight": weight}
    cpu = logits.clone().requires_grad_()
    expected = torch.nn.functional.cross_entropy(cpu, target, **kwargs)
    expected.sum().backward()
    dev = logits.to("fake").requires_grad_()
    dev_kwargs = {**kwargs, "weight": None if weight is None else weight.to("fake")}
    result = torch.nn.functional.cross_entropy(dev, target.to("fake"), **dev_kwargs)
    result.sum().backward()
    same(result.detach(), expected.detach())
    same(dev.grad, cpu.grad)


def test_composed_ops_stay_on_device_kernels_and_match_cpu():
    # _safe_softmax (attention's math path with dropout), mse_loss and tril/triu (its causal mask) are
    # composed by core from the backend's kernels: where any fallback is an error they still run, and
    # match CPU.
    code = (
        "import torch, torch.nn.functional as F\n"
        "torch.manual_seed(0)\n"
        "s = torch.randn(2, 3, 5, 7)\n"
        "s[0, 1, 2] = float('-inf')  # a row that may attend to nothing: 0, not NaN\n"
        "s[1, 0, :, 3] = float('-inf')\n"
        "d = s.to('fake').requires_grad_()\n"
        "c = s.clone().requires_grad_()\n"
        "for dim in (-1, 1):\n"
        "    got, want = torch._safe_softmax(d, dim), torch._safe_softmax(c, dim)\n"
        "    torch.testing.assert_close(got.cpu(), want)\n"
        "    (got * torch.arange(7.0, device='fake')).sum().backward()\n"
        "    (want * torch.arange(7.0)).sum().backward()\n"
        "    torch.testing.assert_close(d.grad.cpu(), c.grad)\n"
        "assert torch.equal(torch._safe_softmax(d, -1)[0, 1, 2].cpu(), torch.zeros(7))\n"
        "h = torch._safe_softmax(s.half().to('fake'), -1, torch.float32)\n"
        "assert h.dtype == torch.float32\n"
        "torch.testing.assert_close(h.cpu(), torch._safe_softmax(s.half(), -1, torch.float32))\n"
        "x, t = torch.randn(8, 5), torch.randn(8, 5)\n"
        "for reduction in ('mean', 'sum', 'none'):\n"
        "    dx = x.to('fake').requires_grad_()\n"
        "    cx = x.clone().requires_grad_()\n"
        "    got, want = F.mse_loss(dx, t.to('fake'), reduction=reduction), F.mse_loss(cx, t, reduction=reduction)\n"
        "    torch.testing.assert_close(got.cpu(), want)\n"
        "    got.sum().backward()\n"
        "    want.sum().backward()\n"
        "    torch.testing.assert_close(dx.grad.cpu(), cx.grad)\n"
        "m = torch.randn(2, 4, 6)\n"
        "for k in (-1, 0, 2):\n"
        "    for op in (torch.tril, torch.triu):\n"
        "        assert torch.equal(op(m.to('fake'), k).cpu(), op(m, k))\n"
        "        ones = torch.ones(5, 3, dtype=torch.bool)\n"
        "        assert torch.equal(op(ones.to('fake'), k).cpu(), op(ones, k))\n"
        "d = m.to('fake')\n"
        "d.tril_(1)\n"
        "assert torch.equal(d.cpu(), m.tril(1))\n"
        "g = m.to('fake').requires_grad_()\n"
        "g.triu(-1).sum().backward()\n"
        "assert torch.equal(g.grad.cpu(), torch.ones_like(m).triu(-1))\n"
        "try:\n"
        "    torch.tril(torch.ones(3, device='fake'))\n"
        "    raise SystemExit('tril of a vector did not raise')\n"
        "except RuntimeError as error:\n"
        "    assert 'at least 2 dimensions' in str(error), error\n"
        "print('ok')\n"
    )
    assert_runs_on_kernels_alone(code)


def test_nll_loss_single_sample_and_bad_targets():
    logp = torch.randn(5).log_softmax(0)
    same(
        torch.nn.functional.nll_loss(logp.to("fake"), torch.tensor(2, device="fake")),
        torch.nn.functional.nll_loss(logp, torch.tensor(2)),
    )
    logits = torch.randn(3, 4, device="fake")
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        torch.nn.functional.cross_entropy(logits, torch.tensor([0, 7, 1], device="fake"))
    with pytest.raises(IndexError, match="Target -3 is out of bounds"):
        torch.nn.functional.cross_entropy(logits, torch.tensor([0, -3, 1], device="fake"))


def test_device_copies_cast_restride_and_concatenate():
    x = torch.randn(5, 6)
    fx = x.to("fake")
    same(fx.t().contiguous(), x.t().contiguous())  # strided device-to-device
    for dtype in (torch.float16, torch.bfloat16, torch.int32, torch.bool, torch.float64):
        same(fx.to(dtype), x.to(dtype))
    assert torch.equal(fx[::2, 1::3].cpu(), x[::2, 1::3])  # a strided download
    target = torch.zeros(6, 5, device="fake")
    target.t()[1:4] = x[1:4].double()  # an upload into a strided view, with a cast
    expected = torch.zeros(6, 5)
    expected.t()[1:4] = x[1:4]
    same(target, expected)
    broadcast = torch.empty(3, 6, device="fake")
    broadcast.copy_(torch.arange(6.0))
    same(broadcast, torch.arange(6.0).expand(3, 6))
    pieces = [torch.randn(2, 3), torch.randn(4, 3).half(), torch.randn(1, 3)]
    same(torch.cat([p.to("fake") for p in pieces]), torch.cat(pieces))
    same(torch.cat([fx, fx.t()[:3].t()], dim=1), torch.cat([x, x.t()[:3].t()], dim=1))  # a strided piece
    out = torch.empty(0, device="fake")
    torch.cat([fx, fx], dim=0, out=out)
    same(out, torch.cat([x, x]))


def test_masked_fill_and_arange():
    x = torch.randn(4, 5)
    mask = torch.rand(5) > 0.5
    fx = x.to("fake")
    same(fx.masked_fill(mask.to("fake"), float("-inf")), x.masked_fill(mask, float("-inf")))
    view, expected = fx.clone().t(), x.clone().t()
    view.masked_fill_(mask.to("fake")[:, None], 7)
    expected.masked_fill_(mask[:, None], 7)
    same(view, expected)
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        fx.masked_fill_(mask.float().to("fake"), 0)
    for args, dtype in (((7,), torch.int64), ((1.5, 4.0, 0.25), torch.float32), ((10, -5, -3), torch.int64)):
        same(torch.arange(*args, device="fake"), torch.arange(*args))
        assert torch.arange(*args, device="fake").dtype == dtype


def test_index_select_index_add_and_embedding():
    table = torch.randn(10, 4)
    index = torch.tensor([3, 0, 3, 9])
    ftable, findex = table.to("fake"), index.to("fake")
    same(ftable.index_select(0, findex), table.index_select(0, index))
    same(ftable.t().index_select(1, findex.int()), table.t().index_select(1, index.int()))
    with pytest.raises(IndexError, match="index out of range"):
        ftable.index_select(0, torch.tensor([1, 10], device="fake"))
    source = torch.randn(4, 4)
    same(ftable.index_add(0, findex, source.to("fake"), alpha=2), table.index_add(0, index, source, alpha=2))
    inplace = ftable.clone()
    inplace.index_add_(1, torch.tensor([0, 0, 2], device="fake"), torch.ones(10, 3, device="fake"))
    same(inplace, table.clone().index_add_(1, torch.tensor([0, 0, 2]), torch.ones(10, 3)))
    embedding = torch.nn.Embedding(10, 4, padding_idx=3)
    device_embedding = torch.nn.Embedding(10, 4, padding_idx=3).to("fake")
    device_embedding.load_state_dict(embedding.state_dict())
    tokens = torch.tensor([[3, 1, 1], [9, 3, 0]])
    grad = torch.randn(2, 3, 4)
    embedding(tokens).backward(grad)
    device_embedding(tokens.to("fake")).backward(grad.to("fake"))
    same(device_embedding.weight.grad, embedding.weight.grad)


def test_gather_and_scatter_add():
    x = torch.randn(4, 5)
    index = torch.tensor([[0, 4, 4], [1, 0, 2], [3, 3, 3], [2, 1, 0]])
    fx, findex = x.to("fake"), index.to("fake")
    same(torch.gather(fx, 1, findex), torch.gather(x, 1, index))
    same(torch.gather(fx.t(), 0, findex.t()[:, :2]), torch.gather(x.t(), 0, index.t()[:, :2]))
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with size 5"):
        torch.gather(fx, 1, torch.tensor([[5]], device="fake"))
    src = torch.randn(4, 3)
    same(
        torch.zeros(4, 5, device="fake").scatter_add(1, findex, src.to("fake")),
        torch.zeros(4, 5).scatter_add(1, index, src),
    )  # repeated indices add up
    leaf, cpu_leaf = x.to("fake").requires_grad_(), x.clone().requires_grad_()
    torch.gather(leaf, 1, findex).sum().backward()  # gather's backward is scatter_add
    torch.gather(cpu_leaf, 1, index).sum().backward()
    same(leaf.grad, cpu_leaf.grad)


def test_max_min_with_indices_and_argmax():
    x = torch.randn(4, 6)
    x[1, 2] = x[1, 4] = 9.0  # ties: the first index wins
    x[3, 1] = float("nan")  # NaN wins
    fx = x.to("fake")
    for dim, keepdim in ((1, False), (0, True), (-1, True)):
        values, indices = torch.max(fx, dim, keepdim)
        expected_values, expected_indices = torch.max(x, dim, keepdim)
        same(values, expected_values)
        same(indices, expected_indices)
        same(torch.min(fx.t(), dim, keepdim).indices, torch.min(x.t(), dim, keepdim).indices)
    same(torch.argmax(fx), torch.argmax(x))
    same(torch.argmin(fx, 1, keepdim=True), torch.argmin(x, 1, keepdim=True))
    same(torch.argmax(torch.tensor(3.0, device="fake")), torch.argmax(torch.tensor(3.0)))
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        torch.max(torch.zeros(2, 0, device="fake"), 1)


def test_softmax_and_index_select_out_and_empty():
    out = torch.empty(0, device="fake")
    x = torch.randn(3, 4)
    torch.ops.aten._softmax.out(x.to("fake"), 1, False, out=out)
    same(out, torch.softmax(x, 1))
    same(torch.softmax(torch.zeros(0, 4, device="fake"), 1), torch.softmax(torch.zeros(0, 4), 1))
    selected = torch.empty(0, device="fake")
    torch.index_select(x.to("fake"), 1, torch.tensor([3, 1], device="fake"), out=selected)
    same(selected, torch.index_select(x, 1, torch.tensor([3, 1])))
    norm = torch.nn.functional.layer_norm
    same(norm(torch.zeros(0, 4, device="fake"), (4,)), norm(torch.zeros(0, 4), (4,)))


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_layer_norm_forward_and_backward(affine: bool):
    x = torch.randn(3, 4, 6).transpose(0, 1)  # non-contiguous
    cpu = torch.nn.LayerNorm(6, elementwise_affine=affine)
    dev = torch.nn.LayerNorm(6, elementwise_affine=affine).to("fake")
    if affine:
        with torch.no_grad():
            cpu.weight.uniform_(0.5, 1.5)
            cpu.bias.uniform_(-0.5, 0.5)
        dev.load_state_dict(cpu.state_dict())
    grad = torch.randn(4, 3, 6)
    cx, dx = x.clone().requires_grad_(), x.to("fake").requires_grad_()
    out = dev(dx)
    cpu(cx).backward(grad)
    out.backward(grad.to("fake"))
    same(out.detach(), cpu(x).detach())
    same(dx.grad, cx.grad)
    if affine:
        same(dev.weight.grad, cpu.weight.grad)
        same(dev.bias.grad, cpu.bias.grad)
    norm = torch.nn.functional.layer_norm
    same(norm(x.to("fake"), (4, 3, 6)[1:]), norm(x, (4, 3, 6)[1:]))  # two normalised dims


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4)], ids=["2d", "3d", "4d"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_batch_norm_training_eval_and_running_stats(shape, affine: bool):
    cpu = torch.nn.BatchNorm1d(3, affine=affine) if len(shape) < 4 else torch.nn.BatchNorm2d(3, affine=affine)
    dev = type(cpu)(3, affine=affine).to("fake")
    x, grad = torch.randn(shape), torch.randn(shape)
    for training in (True, False):
        cpu.train(training)
        dev.train(training)
        cx, dx = x.clone().requires_grad_(), x.to("fake").requires_grad_()
        expected, out = cpu(cx), dev(dx)
        expected.backward(grad)
        out.backward(grad.to("fake"))
        same(out.detach(), expected.detach())
        same(dx.grad, cx.grad)
        if affine:
            same(dev.weight.grad, cpu.weight.grad)
            same(dev.bias.grad, cpu.bias.grad)
        same(dev.running_mean, cpu.running_mean)  # updated in training, used in evaluation
        same(dev.running_var, cpu.running_var)


def test_dropout_draws_from_the_device_generator():
    x = torch.ones(4096, device="fake")
    torch.manual_seed(7)
    first = torch.nn.functional.dropout(x, 0.25)
    torch.manual_seed(7)
    again = torch.nn.functional.dropout(x, 0.25)
    assert torch.equal(first.cpu(), again.cpu())  # reproducible under manual_seed
    state = torch.fake.get_rng_state()
    one = torch.nn.functional.dropout(x, 0.25)
    torch.fake.set_rng_state(state)
    assert torch.equal(torch.nn.functional.dropout(x, 0.25).cpu(), one.cpu())
    assert not torch.equal(one.cpu(), first.cpu())  # the generator moved on
    kept = first.cpu() != 0
    assert 0.70 < kept.float().mean().item() < 0.80
    assert torch.allclose(first.cpu()[kept], torch.full_like(first.cpu()[kept], 1 / 0.75))
    leaf = torch.randn(64, device="fake", requires_grad=True)
    out = torch.nn.functional.dropout(leaf, 0.5)
    out.sum().backward()
    same(leaf.grad, (out.detach().cpu() != 0).float() * 2)  # the mask, scaled
    same(torch.nn.functional.dropout(x, 1.0), torch.zeros(4096))
    same(torch.nn.functional.dropout(x, 0.25, training=False), torch.ones(4096))
    with pytest.raises(ValueError, match="dropout probability"):
        torch.nn.functional.dropout(x, 1.5)


TRAIN = Path(__file__).parent / "kernel_models" / "train.py"


def train_on_device(model: str, dropout: float, policy: str, steps: int = 10, seed: int = 0) -> dict:
    env = {**os.environ, "TORCH_BACKEND_FALLBACK": policy}
    done = subprocess.run(
        [sys.executable, str(TRAIN), model, str(steps), str(dropout), str(seed)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, f"{model} exited {done.returncode}: {done.stderr[-3000:]}"
    return json.loads(done.stdout)


# Tolerances: losses within 1e-5 of CPU's; parameters and buffers within 2e-3
# (AdamW divides by sqrt(v): a last-bit difference in a near-zero gradient can
# move a parameter by up to its learning rate of 3e-3 in a step).
@pytest.mark.parametrize(
    ("model", "policy"),
    [("mlp", "error"), ("gpt", "error"), ("cnn", "allow")],
    ids=["mlp-no-fallback", "transformer-no-fallback", "cnn-conv-on-fallback"],
)
def test_training_steps_match_cpu(model: str, policy: str):
    result = train_on_device(model, dropout=0.0, policy=policy)
    torch.testing.assert_close(result["device"], result["cpu"], atol=1e-5, rtol=0)
    assert max(result["state_error"].values()) < 2e-3, result["state_error"]
    assert result["device"][-1] < result["device"][0]  # it learns


def test_transformer_with_dropout_runs_on_device_and_is_reproducible():
    first = train_on_device("gpt", dropout=0.1, policy="error", steps=4, seed=3)
    second = train_on_device("gpt", dropout=0.1, policy="error", steps=4, seed=3)
    assert first["device"] == second["device"]
    assert first["device"] != first["cpu"]  # the masks are the device generator's, not the CPU's


def test_docs_list_the_ops_on_fakes_kernels():
    from torch_backend.testing import assert_kernel_list_documented

    env = {k: v for k, v in os.environ.items() if k != "TORCH_BACKEND_FORCE_FALLBACK"}
    assert_kernel_list_documented(Path(__file__).resolve().parents[3] / "docs" / "kernels.md", "fake", env)
