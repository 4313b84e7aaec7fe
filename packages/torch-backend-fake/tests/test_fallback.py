"""The zero-copy CPU fallback: aliasing, in-place, out=, views, lists, random ops, policy."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch


def run(code: str, **env: str) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh process, which must exit with status 0."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ | env, timeout=120
    )
    assert out.returncode == 0, f"exited {out.returncode}:\n{out.stdout}{out.stderr}"
    return out


def test_in_place_returns_the_same_tensor_and_writes_device_memory():
    x = torch.arange(6.0, device="fake")
    y = x.add_(1)
    assert y is x
    assert x.cpu().tolist() == [1, 2, 3, 4, 5, 6]


def test_in_place_on_a_view_updates_the_base():
    base = torch.zeros(4, 4, device="fake")
    base[1:3, ::2].add_(5)
    expected = torch.zeros(4, 4)
    expected[1:3, ::2] += 5
    assert torch.equal(base.cpu(), expected)


def test_out_argument_is_resized_and_returned():
    a = torch.randn(3, 4, device="fake")
    out = torch.empty(0, device="fake")
    result = torch.mul(a, 2, out=out)
    assert result is out and out.shape == (3, 4)
    assert torch.equal(out.cpu(), a.cpu() * 2)


def test_views_share_device_memory():
    x = torch.randn(4, 6, device="fake")
    v = x.unfold(1, 2, 2)
    assert v.device == x.device
    assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    x.zero_()
    assert v.abs().sum().item() == 0


def test_tensor_lists_and_optional_tensors():
    parts = [torch.randn(2, 3, device="fake") for _ in range(3)]
    joined = torch.cat(parts)
    assert joined.device == torch.device("fake:0")
    assert torch.equal(joined.cpu(), torch.cat([p.cpu() for p in parts]))
    chunks = torch.split(joined, 2)
    assert all(c.device.type == "fake" for c in chunks)
    target = torch.zeros(5, 3, device="fake")
    target.index_put_((torch.tensor([0, 4], device="fake"),), torch.ones(3, device="fake"))
    assert target.sum().item() == 6
    assert target[torch.tensor([4])].sum().item() == 3  # CPU indices, as with CUDA


def test_results_are_allocated_in_device_memory():
    torch.fake.synchronize()
    before = torch.fake.memory_allocated()
    x = torch.randn(1024, device="fake")
    y = x * 2
    assert torch.fake.memory_allocated() - before == 2 * 4096
    del x, y


def test_ops_on_second_device_stay_there():
    x = torch.randn(8, device="fake:1")
    y = (x.exp() + x).sum()
    assert y.device == torch.device("fake:1")
    assert torch.fake.current_device() == 0


def test_mixing_devices_raises_like_cuda():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(3, device="fake") + torch.ones(3)
    with pytest.raises(RuntimeError, match="fake:0 and fake:1"):
        torch.ones(3, device="fake:0") + torch.ones(3, device="fake:1")
    assert (torch.ones(3, device="fake") + torch.tensor(2.0)).sum().item() == 9  # CPU scalars are fine


def test_random_ops_use_the_device_generator_reproducibly():
    torch.fake.manual_seed(7)
    a = torch.rand(5, device="fake")
    torch.fake.manual_seed(7)
    b = torch.rand(5, device="fake")
    assert torch.equal(a.cpu(), b.cpu())
    torch.manual_seed(0)
    torch.fake.manual_seed(7)
    c = torch.rand(5, device="fake")
    assert torch.equal(c.cpu(), a.cpu())  # independent of the CPU generator
    torch.fake.manual_seed(8)
    assert not torch.equal(torch.rand(5, device="fake").cpu(), a.cpu())
    g = torch.Generator(device="fake").manual_seed(7)
    assert torch.equal(torch.rand(5, device="fake", generator=g).cpu(), a.cpu())
    with pytest.raises(RuntimeError, match="generator"):
        torch.rand(5, device="fake", generator=torch.Generator().manual_seed(1))


def test_dropout_is_reproducible_under_manual_seed():
    x = torch.ones(1000, device="fake")
    torch.manual_seed(3)
    a = torch.nn.functional.dropout(x, 0.5)
    torch.manual_seed(3)
    b = torch.nn.functional.dropout(x, 0.5)
    assert torch.equal(a.cpu(), b.cpu()) and 300 < (a == 0).sum().item() < 700


def test_backend_native_kernel_overrides_the_fallback():
    table = torch._C._dispatch_dump_table("aten::fill_.Scalar")
    line = next(row for row in table.splitlines() if row.startswith("PrivateUse1:"))
    assert "Activate.cpp" in line  # registered through the backend's kernel hook
    assert torch.full((3,), 2.5, device="fake").cpu().tolist() == [2.5, 2.5, 2.5]


def test_policy_error_names_the_op():
    out = run(
        "import torch\n"
        "x = torch.ones(3, device='fake')\n"
        "try:\n"
        "    x.atan()\n"  # no device kernel in any mode: the fallback's op
        "except NotImplementedError as e:\n"
        "    print('raised:', e)\n",
        TORCH_BACKEND_FALLBACK="error",
    )
    assert "raised: The operator 'aten::atan.out' has no native kernel for the fake device" in out.stdout or (
        "raised: The operator 'aten::atan' has no native kernel for the fake device" in out.stdout
    ), out.stdout + out.stderr


def test_policy_warn_warns_once_per_op():
    out = run(
        "import torch, warnings\n"
        "warnings.simplefilter('always')\n"
        "x = torch.ones(3, device='fake')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    x.atan(); x.atan(); x.asinh()\n"
        "names = [str(w.message).split(\"'\")[1] for w in caught if 'native kernel' in str(w.message)]\n"
        "print(sorted(names))\n"
        "print(str(caught[0].message))\n",
        TORCH_BACKEND_FALLBACK="warn",
    )
    names, message = out.stdout.strip().split("\n")
    assert names in ("['aten::asinh', 'aten::atan']", "['aten::asinh.out', 'aten::atan.out']"), out.stdout + out.stderr
    # Where it was raised, as a place in core's package: not the build machine's source tree.
    assert "(Triggered internally at torch-backend-core/csrc/aten/fallback/Policy.cpp:" in message, message
    assert str(Path(__file__).resolve().parents[3]) not in message


def _voluntary_switches() -> int:
    total = 0
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/status") as status:
            for line in status:
                if line.startswith("voluntary_ctxt_switches"):
                    total += int(line.split(":")[1])
    return total


@pytest.mark.skipif(not torch.backends.openmp.is_available(), reason="torch without OpenMP")
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
@pytest.mark.skipif(
    "1" in (os.environ.get("TORCH_BACKEND_FAKE_KERNELS"), os.environ.get("TORCH_BACKEND_FAKE_DISCRETE")),
    reason="fake's kernels and copies wake its stream and copy-engine threads on every op, as a device's queues would",
)
def test_small_host_work_starts_no_second_openmp_team() -> None:
    # Backward runs on the autograd engine's device thread; small host calls
    # there must not start an OpenMP team beside the main thread's (whose
    # workers sleep and wake on every op: about 40 switches per step before).
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 10)).to("fake")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    inputs, targets = torch.randn(16, 32, device="fake"), torch.randint(0, 10, (16,), device="fake")

    def steps(count: int) -> None:
        for _ in range(count):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(inputs), targets).backward()
            optimizer.step()
        torch.fake.synchronize()

    steps(5)
    before = _voluntary_switches()
    steps(100)
    per_step = (_voluntary_switches() - before) / 100
    assert per_step < 12, f"{per_step:.1f} voluntary context switches per step"
