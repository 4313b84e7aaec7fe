"""Injected runtime faults (torch_backend_fake.faults) surface as Python errors and lose nothing.

For each runtime operation and each of its first calls in a workload that uses
streams, events, pinned memory and asynchronous copies: the fault raises an
exception naming the call and the runtime's error text (or, where core can do
without the call, such as an event marking a freed block's last use, a warning
and the slower correct path); tensors made before it keep their values; the
allocators' statistics agree with the runtime's own count of device memory;
and the same workload then runs correctly. Runs in both memory modes in CI.
"""

import gc
import os
import subprocess
import sys
import warnings

import pytest
import torch

import torch_backend_fake.faults as faults

OPERATIONS = [op for op in faults.OPERATIONS if op not in ("stream", "event")]
CALLS = (1, 2, 3)


def run_script(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ | (env or {}), timeout=120
    )


def workload() -> tuple[torch.Tensor, ...]:
    host = torch.randn(64, 64)
    side = torch.fake.Stream()
    with torch.fake.stream(side):
        x = host.to("fake", non_blocking=True)
        y = (x @ x).relu_()
        done = torch.fake.Event(enable_timing=True)
        done.record()
    torch.fake.current_stream().wait_event(done)
    y.record_stream(torch.fake.current_stream())
    pinned = torch.empty(256, pin_memory=True)
    pinned.copy_(y.flatten()[:256], non_blocking=True)
    torch.fake.synchronize()
    return host, y.cpu(), pinned.clone(), y.sum().cpu()


def check_results(host: torch.Tensor, y: torch.Tensor, pinned: torch.Tensor, total: torch.Tensor) -> None:
    expected = (host @ host).relu_()
    torch.testing.assert_close(y, expected)
    torch.testing.assert_close(pinned, expected.flatten()[:256])
    torch.testing.assert_close(total, expected.sum())


def allocator_consistent(kept_bytes: int) -> list[str]:
    """Differences between core's allocator statistics and the runtime's own count."""
    gc.collect()
    torch.fake.synchronize()
    torch.fake.empty_cache()
    stats = torch.fake.memory_stats()
    free, total = torch.fake.mem_get_info()
    problems = []
    if stats["allocated_bytes.all.current"] != kept_bytes:
        problems.append(f"allocated {stats['allocated_bytes.all.current']} bytes, expected {kept_bytes}")
    if stats["active_bytes.all.current"] != stats["allocated_bytes.all.current"]:
        problems.append(
            f"active {stats['active_bytes.all.current']} != allocated {stats['allocated_bytes.all.current']}"
        )
    if torch.fake.memory_reserved() != total - free:
        problems.append(f"reserved {torch.fake.memory_reserved()} != runtime's used {total - free}")
    return problems


def run_with_fault(operation: str, nth: int, capfd: pytest.CaptureFixture) -> tuple[type | None, list[str]]:
    """Runs the workload with one fault armed: the error's type (None if none) and every message seen.

    Messages: the error's, Python warnings', and what C++ printed (a warning raised while
    freeing memory from a tensor's destructor reaches no Python warning handler).
    """
    faults.inject(operation, nth)
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            workload()
            kind, messages = None, []
        except Exception as error:  # its traceback holds the workload's tensors: keep only text
            kind, messages = type(error), [str(error)]
    faults.clear()
    return kind, messages + [str(w.message) for w in caught] + [capfd.readouterr().err]


def test_injected_faults_are_errors_that_lose_nothing(capfd):
    torch.fake.synchronize()
    torch.fake.empty_cache()  # blocks earlier tests cached would serve the workload without a malloc
    kept = torch.arange(1000.0, device="fake")
    kept_values = kept.cpu()
    kept_bytes = torch.fake.memory_allocated()
    injected = survived = lost = 0
    problems = []
    operations_hit = set()
    for operation in OPERATIONS:
        for nth in CALLS:
            before = faults.injected()
            kind, messages = run_with_fault(operation, nth, capfd)
            if faults.injected() == before:
                continue  # the workload makes fewer such calls
            injected += 1
            operations_hit.add(operation)
            where = f"{operation} call {nth}"
            if not any("injected fault" in m and operation in m for m in messages):
                problems.append(f"{where}: no error or warning names the call and the runtime's text: {messages}")
            if kind is not None and kind is not RuntimeError:
                problems.append(f"{where}: {kind.__name__}, not RuntimeError")
            if not torch.equal(kept.cpu(), kept_values):
                lost += 1
                problems.append(f"{where}: a tensor made before the fault changed")
                kept_values = kept.cpu()
            problems += [f"{where}: {p}" for p in allocator_consistent(kept_bytes)]
            try:
                check_results(*workload())  # the process keeps working
                survived += 1
            except Exception as again:
                problems.append(f"{where}: the workload fails after the fault: {again}")
    with capfd.disabled():
        print(f"\nfault injection: {injected} faults injected, {survived} survived, values lost: {lost}")
    assert not problems, "\n".join(problems)
    # Not a vacuous pass: the workload reaches the allocation, copy, stream and event calls.
    expected = {"malloc", "memcpy_async", "stream_synchronize", "stream_wait_event"}
    if os.environ.get("TORCH_BACKEND_FAKE_KERNELS") == "1":
        expected.add("kernel")  # launches only with fake's device kernels on
    expected |= {"event_create", "event_record", "synchronize_device"}
    assert expected <= operations_hit, f"never reached: {sorted(expected - operations_hit)}"
    assert survived == injected and lost == 0


@pytest.mark.skipif(
    os.environ.get("TORCH_BACKEND_FAKE_DISCRETE") != "1",
    reason="with host-addressable memory host code copies itself, synchronously: nothing is queued",
)
def test_a_failed_blocking_copy_never_lands_later():
    # The caller may free pageable host memory once the copy raised: no part of the
    # copy may still be queued then (it once was, after a failed stream_synchronize,
    # and wrote into freed heap memory: glibc aborted later, elsewhere).
    source = torch.arange(1 << 16, dtype=torch.float32, device="fake")
    torch.fake.synchronize()
    for operation in ("stream_synchronize", "memcpy"):
        destination = torch.zeros(1 << 16)
        torch.fake._sleep(200_000)  # the stream is busy: a queued copy would land after the error
        faults.inject(operation, 1)
        try:
            with pytest.raises(RuntimeError, match="injected fault"):
                destination.copy_(source)
        finally:
            faults.clear()
        seen = destination.clone()
        torch.fake.synchronize()
        assert torch.equal(destination, seen), f"the copy that failed in {operation} wrote afterwards"
    torch.testing.assert_close(source.cpu(), torch.arange(1 << 16, dtype=torch.float32))


def test_out_of_memory_the_runtime_reports_carries_its_words():
    # Both the first malloc and the one core retries after emptying its cache run out.
    out = run_script(
        "import torch, torch_backend_fake.faults as faults\n"
        "torch.ones(1, device='fake')\n"
        "faults.inject('malloc', 1, times=2, out_of_memory=True)\n"
        "try:\n"
        "    torch.empty(1 << 20, device='fake')\n"
        "except torch.OutOfMemoryError as error:\n"
        "    print(str(error).split(' The runtime reported: ')[1])\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "out of fake device memory."


def test_faults_armed_by_environment_variable():
    out = run_script(
        "import torch, torch_backend_fake.faults as faults\n"
        "try:\n"
        "    torch.empty(1 << 20, device='fake')\n"
        "except RuntimeError as error:\n"
        "    print('raised', 'from malloc' in str(error))\n"
        "print(torch.ones(3, device='fake').sum().item(), faults.injected())\n",
        env={"TORCH_BACKEND_FAKE_FAULTS": "malloc:1,bogus:1"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["raised", "True", "3.0", "1"]
    assert "entry 'bogus:1' is not operation:nth[:times]; ignored" in out.stderr


def test_lost_device_fails_its_calls_and_the_process_exits_with_its_own_status():
    out = run_script(
        "import sys, torch, torch_backend_fake.faults as faults\n"
        "on0 = torch.arange(4.0, device='fake:0')\n"
        "on1 = torch.arange(4.0, device='fake:1')\n"
        "faults.lose_device(1)\n"
        "for attempt in (lambda: torch.empty(1 << 20, device='fake:1'), lambda: on1.cpu(),\n"
        "                lambda: torch.fake.synchronize(1)):\n"
        "    try:\n"
        "        attempt()\n"
        "        print('no error')\n"
        "    except RuntimeError as error:\n"
        "        print('device lost' in str(error))\n"
        "print((on0 * 2).cpu().tolist())\n"
        "del on1\n"
        "sys.exit(3)\n"
    )
    assert out.returncode == 3, out.stderr
    assert out.stdout.split("\n")[:4] == ["True", "True", "True", "[0.0, 2.0, 4.0, 6.0]"], out.stdout


def test_out_of_memory_in_a_training_step_is_recoverable():
    # As with CUDA: catch torch.OutOfMemoryError, free, retry with a smaller batch.
    out = run_script(
        "import torch\n"
        "layers = [torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)]\n"
        "model = torch.nn.Sequential(*layers).to('fake')\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.01)\n"
        "before = [p.detach().cpu().clone() for p in model.parameters()]\n"
        "def step(batch):\n"
        "    optimizer.zero_grad()\n"
        "    model(torch.randn(batch, 256, device='fake')).square().mean().backward()\n"
        "    optimizer.step()\n"
        "try:\n"
        "    step(60000)\n"
        "    print('no error')\n"
        "except torch.OutOfMemoryError as error:\n"
        "    print('oom')\n"
        "unchanged = all(torch.equal(b, p.detach().cpu()) for b, p in zip(before, model.parameters()))\n"
        "optimizer.zero_grad(); torch.fake.empty_cache()\n"
        "step(64)\n"
        "print(unchanged, all(torch.isfinite(p).all().item() for p in model.parameters()))\n",
        env={"TORCH_BACKEND_FAKE_MEMORY_MB": "128"},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["oom", "True", "True"]


def test_unknown_operation_is_a_value_error():
    with pytest.raises(ValueError, match="unknown fake runtime operation 'mallocc'"):
        faults.inject("mallocc")
    with pytest.raises(ValueError, match="nth and times must be >= 1"):
        faults.inject("malloc", nth=0)


LAUNCH_FAULT = (
    "import torch\n"
    "from torch_backend_fake import faults\n"
    "x = torch.ones(1000, device='fake'); y = torch.full((1000,), 2.0, device='fake')\n"
    "torch.fake.synchronize()\n"
    "faults.inject('kernel', 1)\n"
    "try:\n"
    "    z = x.mul(y)\n"
    "    print('mul returned')\n"
    "    torch.fake.synchronize()\n"
    "except RuntimeError as e:\n"
    "    print('raised:', str(e).splitlines()[0])\n"
    "print('then', (x + y).sum().item())\n"
)


@pytest.mark.skipif(
    os.environ.get("TORCH_BACKEND_FAKE_KERNELS") != "1", reason="fake launches kernels only with its device kernels on"
)
def test_launch_blocking_raises_an_asynchronous_kernel_failure_from_its_op():
    # Without the setting the failed launch is reported later, by whichever call synchronises.
    late = run_script(LAUNCH_FAULT)
    assert late.returncode == 0, late.stderr
    lines = late.stdout.splitlines()
    assert lines[0] == "mul returned" and "a kernel failed on the device" in lines[1], late.stdout
    # With it, by the op whose kernel failed, naming it; the process goes on.
    blocking = run_script(LAUNCH_FAULT, {"TORCH_BACKEND_LAUNCH_BLOCKING": "1"})
    assert blocking.returncode == 0, blocking.stderr
    raised, then = blocking.stdout.splitlines()
    assert raised.startswith("raised: mul") and " failed on fake:0: a kernel failed on the device" in raised, raised
    assert "TORCH_BACKEND_LAUNCH_BLOCKING=1" in raised
    assert then == "then 3000.0"
