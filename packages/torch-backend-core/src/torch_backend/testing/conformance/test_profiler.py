"""PyTorch's profiler on the device: device time per op, Chrome traces, and the legacy profiler.

With ``ProfilerActivity.PrivateUse1`` core times every device kernel it
launches with the runtime's events and hands the result to PyTorch's profiler
(Kineto) as device activity linked to the op that launched it. Device time is
measured for ops that run as device kernels: those tests need the backend's
kernels for mm and add. Needs PyTorch 2.13+ (its PrivateUse1 profiler registry).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch.profiler import ProfilerActivity, profile, record_function

from torch_backend import _C
from torch_backend._compat import has_privateuse1_profiler_registry
from torch_backend.testing import run_python
from torch_backend.testing.conformance._support import DEVICE, dev

# Whether the backend's device kernels serve the ops timed below (core's op table).
KERNELS = {"mm", "add.Tensor"} <= {op for op, _family, _kernel, on_device, _forced in _C._op_table() if on_device}
HAS_REGISTRY = has_privateuse1_profiler_registry()
DEVICE_ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]

needs_kernels = pytest.mark.skipif(
    not KERNELS, reason="device time is measured for device kernels (the backend has none for mm and add)"
)
needs_registry = pytest.mark.skipif(not HAS_REGISTRY, reason="PyTorch < 2.13 has no PrivateUse1 profiler registry")


def device_time(event: object) -> float:
    return getattr(event, "device_time_total", 0.0)


def profiled_step() -> profile:
    a = torch.randn(192, 192, device=DEVICE)
    b = torch.randn(192, 192, device=DEVICE)
    dev.synchronize()
    with profile(activities=DEVICE_ACTIVITIES) as prof:
        with record_function("my_block"):
            c = torch.mm(a, b)
            d = torch.add(c, a)
            dev.synchronize()
    torch.testing.assert_close(d.cpu(), a.cpu() @ b.cpu() + a.cpu(), rtol=1e-4, atol=1e-4)
    return prof


@needs_registry
@needs_kernels
def test_matmul_and_add_have_device_time() -> None:
    averages = {event.key: event for event in profiled_step().key_averages()}
    for op in ("aten::mm", "aten::add"):
        assert op in averages, sorted(averages)
        assert device_time(averages[op]) > 0, (op, averages[op])
    # The enclosing range holds its ops' device time.
    assert device_time(averages["my_block"]) >= device_time(averages["aten::mm"])
    assert f"{DEVICE}.synchronize" in averages


@needs_registry
@needs_kernels
def test_chrome_trace_has_device_kernels_linked_to_their_ops(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    profiled_step().export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert {"mm", "add.Tensor"} <= {e["name"] for e in kernels}, sorted({e["name"] for e in kernels})
    assert all(e["dur"] > 0 for e in kernels if e["name"] == "mm")
    names = {e.get("name") for e in events if e.get("cat") in ("cpu_op", "user_annotation")}
    assert {"aten::mm", "my_block", f"{DEVICE}.synchronize"} <= names
    # Arrows from launching op to kernel, as for CUDA.
    assert any(e.get("cat") == "ac2g" for e in events)


@needs_registry
@needs_kernels
def test_backward_kernels_are_attributed() -> None:
    weight = torch.randn(64, 64, device=DEVICE, requires_grad=True)
    inputs = torch.randn(32, 64, device=DEVICE)
    with profile(activities=DEVICE_ACTIVITIES) as prof:
        (inputs @ weight).square().sum().backward()
        dev.synchronize()
    averages = {event.key: event for event in prof.key_averages()}
    assert device_time(averages["aten::mm"]) > 0
    assert averages["aten::mm"].count >= 2  # forward and the weight's gradient


def test_without_the_device_activity_nothing_is_timed_on_the_device() -> None:
    a = torch.randn(64, 64, device=DEVICE)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        torch.mm(a, a)
        dev.synchronize()
    averages = {event.key: event for event in prof.key_averages()}
    assert "aten::mm" in averages
    assert all(device_time(event) == 0 for event in averages.values())
    # The device keeps working after profiling sessions of either kind.
    torch.testing.assert_close(torch.mm(a, a).cpu(), a.cpu() @ a.cpu())


@pytest.mark.parametrize("use_kineto", [False, True])
def test_autograd_profiler_times_every_op_with_device_events(use_kineto: bool) -> None:
    # torch.autograd.profiler.profile(use_device=DEVICE), as PyTorch's OpenReg tests use it: each op is
    # bracketed with two of the device's timing events (PyTorch's PrivateUse1 profiler stubs), on the
    # fallback as on kernels; without them every op warned "not enabled" and the times were garbage
    # (-2e16 us). Device time: every op's in the legacy profiler (events around each op), those that
    # ran as device kernels with Kineto (2.13+'s registry). In a fresh process: the warnings go to stderr.
    timed_on_device = not use_kineto or (KERNELS and HAS_REGISTRY)
    code = (
        "import torch\n"
        f"x = torch.randn(64, 64, device={DEVICE!r})\n"
        f"with torch.autograd.profiler.profile(use_device={DEVICE!r}, use_kineto={use_kineto}) as prof:\n"
        "    (x @ x).relu()\n"
        f"    torch.{DEVICE}.synchronize()\n"
        "ops = {e.name: e for e in prof.function_events}\n"
        "assert {'aten::mm', 'aten::relu'} <= set(ops), sorted(ops)\n"
        "for name in ('aten::mm', 'aten::relu'):\n"
        "    assert 0 < ops[name].cpu_time_total < 60e6 and 0 <= ops[name].device_time_total < 60e6, ops[name]\n"
        f"assert ops['aten::mm'].device_time_total > 0 or not {timed_on_device}, ops['aten::mm']\n"
        "print('ok')\n"
    )
    out = run_python(code)
    assert out.stdout.strip() == "ok"
    assert "not enabled" not in out.stderr and "INTERNAL ASSERT" not in out.stderr, out.stderr[-2000:]


def test_profile_memory_shows_device_allocations_up_to_the_peak(tmp_path: Path) -> None:
    # The caching allocator reports every allocation and free to the profiler, as CUDA's does: the Chrome
    # trace's device [memory] events carry the device's totals, whose highest is max_memory_allocated().
    # The CPU activity records memory events (every supported torch; no device profiler needed).
    dev.reset_peak_memory_stats()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        x = torch.empty(1 << 20, device=DEVICE)  # 4 MiB
        y = x * 2
        del x
        z = y + 1
        del y, z
    sizes = [e.device_memory_usage for e in prof.events() if e.name == "aten::empty"]
    assert 4 << 20 in sizes, sizes
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    trace = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    device_type = int(torch._C._autograd.DeviceType.PrivateUse1)
    memory = [e["args"] for e in trace if e.get("name") == "[memory]" and e["args"]["Device Type"] == device_type]
    assert {m["Bytes"] for m in memory} >= {4 << 20, -(4 << 20)}, memory
    assert max(m["Total Allocated"] for m in memory) == dev.max_memory_allocated()
