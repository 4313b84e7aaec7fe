"""The generated ``torch.fake`` module: device count, selection, properties, memory."""

import os
import subprocess
import sys

import pytest
import torch


def run(code: str, **env: str) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh process, which must exit with status 0."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ | env, timeout=60)
    assert out.returncode == 0, f"exited {out.returncode}:\n{out.stdout}{out.stderr}"
    return out


def test_default_device_count_is_two():
    assert torch.fake.is_available()
    assert torch.fake.device_count() == 2
    assert torch.accelerator.device_count() == 2


def test_device_count_is_configurable():
    out = run("import torch; print(torch.fake.device_count())", TORCH_BACKEND_FAKE_DEVICE_COUNT="3")
    assert out.stdout.strip() == "3", out.stderr


def test_set_device_and_context_manager():
    assert torch.fake.current_device() == 0
    torch.fake.set_device(1)
    try:
        assert torch.fake.current_device() == 1
        assert torch.empty(1, device="fake").device.index == 1
        with torch.fake.device("fake:0"):
            assert torch.fake.current_device() == 0
        assert torch.fake.current_device() == 1
    finally:
        torch.fake.set_device(0)


def test_invalid_device_index_raises():
    with pytest.raises(RuntimeError, match="invalid device index 5"):
        torch.fake.set_device(5)
    with pytest.raises(RuntimeError, match="invalid device index 7"):
        torch.empty(1, device="fake:7")
    with pytest.raises(ValueError, match="Expected a fake device"):
        torch.fake.set_device("cpu")


def test_bad_index_and_huge_allocation_are_python_errors_in_a_process_that_goes_on():
    # In a process of its own, so a crash shows as its exit status (as it did
    # on torch 2.11 before core built against it): CI runs this on every
    # supported release.
    code = (
        "import torch\n"
        "cases = {\n"
        "    'empty': lambda: torch.empty(1, device='fake:99'),\n"
        "    'to': lambda: torch.ones(2).to('fake:99'),\n"
        "    'set_device': lambda: torch.fake.set_device(99),\n"
        "    'huge': lambda: torch.empty(64 << 40, dtype=torch.uint8, device='fake'),\n"
        "}\n"
        "for name, case in cases.items():\n"
        "    try:\n"
        "        case()\n"
        "    except Exception as error:\n"
        "        print(name, type(error).__name__, str(error).splitlines()[0])\n"
        "print(torch.ones(2, device='fake').sum().item())\n"
    )
    out = run(code)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    bad_index = "RuntimeError invalid device index 99 for 'fake': 2 device(s) available"
    assert lines[:3] == [f"{case} {bad_index}" for case in ("empty", "to", "set_device")]
    assert lines[3].startswith("huge OutOfMemoryError fake:0 out of memory. Tried to allocate 65536.00 GiB")
    assert lines[4:] == ["2.0"]


def test_lazy_initialisation():
    code = "import torch; a = torch.fake.is_initialized(); torch.ones(1, device='fake')"
    out = run(code + "; print(a, torch.fake.is_initialized())")
    assert out.stdout.split() == ["False", "True"], out.stderr
    out = run("import torch; torch.fake.init(); print(torch.fake.is_initialized())")
    assert out.stdout.strip() == "True", out.stderr


def test_forked_child_after_init_gets_a_clear_error():
    code = (
        "import os, torch\n"
        "x = torch.ones(2, device='fake')\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    try:\n"
        "        torch.ones(2, device='fake')\n"
        "    except RuntimeError as e:\n"
        "        print('child:', e, flush=True)\n"
        "    os._exit(0)\n"
        "assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0, 'child failed'\n"
        "print('parent:', x.sum().item())\n"
    )
    out = run(code)
    assert "child: Cannot re-initialize fake in forked subprocess" in out.stdout, out.stderr
    assert "'spawn' start method" in out.stdout
    assert "parent: 2.0" in out.stdout


def test_fork_before_init_can_use_the_device():
    code = (
        "import os, torch\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    print('child:', torch.ones(3, device='fake').sum().item(), flush=True)\n"
        "    os._exit(0)\n"
        "assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0, 'child failed'\n"
    )
    out = run(code)
    assert "child: 3.0" in out.stdout, out.stderr


def test_accelerator_api():
    assert torch.accelerator.current_accelerator() == torch.device("fake")
    torch.accelerator.set_device_index(1)
    try:
        assert torch.accelerator.current_device_index() == 1
        assert torch.fake.current_device() == 1
    finally:
        torch.accelerator.set_device_index(0)
    torch.accelerator.synchronize()
    assert torch.accelerator.current_stream().device == torch.device("fake:0")


def test_generated_tensor_module_and_storage_methods():
    t = torch.ones(2)
    assert t.fake().is_fake and not t.is_fake
    module = torch.nn.Linear(2, 2).fake()
    assert module.weight.device == torch.device("fake:0")
    storage = t.untyped_storage().fake()
    assert storage.device == torch.device("fake:0")


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
