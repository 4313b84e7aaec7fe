"""What is particular to fake's simulated hardware: its device count, names, capacity and settings.

The behaviour every backend shares is the conformance kit's (torch_backend.testing), which
CI runs against fake in both memory modes."""

import functools

import pytest
import torch

from torch_backend.testing import run_python

# A fresh process with fake active, which must exit with status 0.
run = functools.partial(run_python, timeout=60)


def test_default_device_count_is_two():
    assert torch.fake.is_available()
    assert torch.fake.device_count() == 2
    assert torch.accelerator.device_count() == 2


def test_device_count_is_configurable():
    out = run("import torch; print(torch.fake.device_count())", TORCH_BACKEND_FAKE_DEVICE_COUNT="3")
    assert out.stdout.strip() == "3", out.stderr


def test_properties_and_names():
    props = torch.fake.get_device_properties(1)
    assert props.name == "Fake Device 1 (host memory)"
    assert props.total_memory == 65536 << 20
    assert torch.fake.get_device_name("fake:0") == "Fake Device 0 (host memory)"
    assert torch.fake.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]
    torch.fake.synchronize()


def test_device_capability():
    # As torch.cuda: numbers from the runtime (fake reports 1.0), and the free-form text.
    props = torch.fake.get_device_properties(0)
    assert (props.capability, props.major, props.minor, props.multi_processor_count) == ("fake-1.0", 1, 0, 1)
    assert torch.fake.get_device_capability("fake:1") == (1, 0)
    # torch.accelerator's form: the dtypes tensors may have (all: copies are dtype-blind and
    # the CPU fallback runs any op the backend has no kernel for).
    supported = torch.accelerator.get_device_capability("fake:0")["supported_dtypes"]
    assert {torch.float32, torch.float64, torch.bfloat16, torch.int8, torch.bool, torch.complex64} <= supported
    for dtype in (torch.float64, torch.complex64, torch.int8):
        assert torch.ones(2, dtype=dtype, device="fake").sum().item() == 2
    with pytest.raises(RuntimeError, match="invalid device index 5"):
        torch.accelerator.get_device_capability("fake:5")


def test_memory_is_owned_by_the_fake_runtime():
    torch.fake.empty_cache()
    free_before, _ = torch.fake.mem_get_info(1)
    x = torch.empty(16 << 20, dtype=torch.uint8, device="fake:1")
    free_during, _ = torch.fake.mem_get_info(1)
    assert free_before - free_during == 16 << 20  # a 16 MiB segment of fake memory
    del x
    assert torch.fake.mem_get_info(1)[0] == free_during  # cached, not returned
    torch.fake.empty_cache()
    assert torch.fake.mem_get_info(1)[0] == free_before


def test_allocation_beyond_capacity_raises_out_of_memory():
    code = (
        "import torch\n"
        "try:\n"
        "    torch.empty(128 << 20, dtype=torch.uint8, device='fake')\n"
        "except torch.OutOfMemoryError as e:\n"
        "    print('OOM:', e)\n"
        "print(torch.empty(32 << 20, dtype=torch.uint8, device='fake').numel())\n"
    )
    out = run(code, TORCH_BACKEND_FAKE_MEMORY_MB="64")
    assert "OOM: fake:0 out of memory. Tried to allocate 128.00 MiB" in out.stdout, out.stderr
    assert "total capacity of 64.00 MiB of which 64.00 MiB is free" in out.stdout
    assert out.stdout.strip().endswith(str(32 << 20))


def test_oom_retry_frees_the_cache():
    code = (
        "import torch\n"
        "x = torch.empty(40 << 20, dtype=torch.uint8, device='fake'); del x\n"
        "y = torch.empty(50 << 20, dtype=torch.uint8, device='fake')\n"
        "s = torch.fake.memory_stats()\n"
        "print(s['num_alloc_retries'], s['num_ooms'], s['reserved_bytes.all.current'] >> 20)\n"
    )
    out = run(code, TORCH_BACKEND_FAKE_MEMORY_MB="64")
    assert out.stdout.split() == ["1", "0", "50"], out.stderr


def test_one_liner_picks_fake_with_no_setting():
    code = "import torch; x = torch.randn(4, device='fake'); print((x * 2 + 1).cpu())"
    out = run(code, TORCH_BACKEND="")  # chosen by priority: the only available backend here
    assert out.stdout.startswith("tensor([") and out.stderr == ""


INLINE_KERNELS = """
import threading, torch
x = torch.arange(16.0, device="fake")
# An idle stream: the kernel runs on this thread, at once.
torch.testing.assert_close((x * 2 + 1).relu().cpu(), (torch.arange(16.0) * 2 + 1).relu())
# A busy stream: the kernel is queued behind the copy that writes its input, never run ahead of it.
y = torch.zeros(16, device="fake")
ones = torch.ones(16).pin_memory()
torch.fake._sleep(200_000)
y.copy_(ones, non_blocking=True)
z = y * 3
torch.testing.assert_close(z.cpu(), torch.full((16,), 3.0))
# Threads issuing kernels to one stream at once: each result is right.
def work(k):
    for _ in range(200):
        r = (x + k).mul(2)
        assert torch.equal(r.cpu(), (torch.arange(16.0) + k) * 2), k
threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in threads: t.start()
for t in threads: t.join()
torch.fake.synchronize()
print("ok")
"""


def test_inline_kernels_keep_stream_order_and_results():
    out = run(INLINE_KERNELS, TORCH_BACKEND_FAKE_KERNELS="1", TORCH_BACKEND_FAKE_INLINE_KERNELS="1")
    assert out.stdout.strip() == "ok", out.stderr


def test_a_runtime_without_capture_symbols_refuses_graphs_clearly():
    # TORCH_BACKEND_FAKE_GRAPHS=0: fake's capture_begin answers kNotSupported, as a runtime without it.
    script = """
import torch
graph = torch.fake.Graph()
try:
    with torch.fake.graph(graph):
        pass
except NotImplementedError as error:
    print("refused:", error)
print("capturing:", torch.fake.is_current_stream_capturing())
print("works:", (torch.ones(2, device="fake") + 1).tolist())
"""
    out = run_python(script, TORCH_BACKEND_FAKE_GRAPHS="0")
    assert "refused: the fake runtime cannot capture graphs (DeviceRuntime::capture_begin" in out.stdout
    assert "capturing: False" in out.stdout and "works: [2.0, 2.0]" in out.stdout
