"""The generated ``torch.<device>`` module: device count, selection, properties, memory."""

import pytest
import torch

from torch_backend.testing import run_python as run
from torch_backend.testing.conformance._support import DEVICE, dev, needs_two_devices, on


def test_available_with_devices():
    assert dev.is_available()
    assert dev.device_count() >= 1
    assert torch.accelerator.device_count() == dev.device_count()
    assert torch.accelerator.is_available()


@needs_two_devices
def test_set_device_and_context_manager():
    assert dev.current_device() == 0
    dev.set_device(1)
    try:
        assert dev.current_device() == 1
        assert torch.empty(1, device=DEVICE).device.index == 1
        with dev.device(on(0)):
            assert dev.current_device() == 0
        assert dev.current_device() == 1
    finally:
        dev.set_device(0)


def test_invalid_device_index_raises():
    with pytest.raises(RuntimeError, match="invalid device index 99"):
        dev.set_device(99)
    with pytest.raises(RuntimeError, match="invalid device index 97"):
        torch.empty(1, device=on(97))
    with pytest.raises(ValueError, match=f"Expected a {DEVICE} device"):
        dev.set_device("cpu")


def test_bad_index_and_huge_allocation_are_python_errors_in_a_process_that_goes_on():
    # In a process of its own, so a crash shows as its exit status.
    code = (
        "import torch\n"
        f"device = {DEVICE!r}\n"
        "cases = {\n"
        "    'empty': lambda: torch.empty(1, device=f'{device}:99'),\n"
        "    'to': lambda: torch.ones(2).to(f'{device}:99'),\n"
        "    'set_device': lambda: torch.get_device_module(device).set_device(99),\n"
        "    'huge': lambda: torch.empty(64 << 40, dtype=torch.uint8, device=device),\n"
        "}\n"
        "for name, case in cases.items():\n"
        "    try:\n"
        "        case()\n"
        "    except Exception as error:\n"
        "        print(name, type(error).__name__, str(error).splitlines()[0])\n"
        "print(torch.ones(2, device=device).sum().item())\n"
    )
    lines = run(code).stdout.splitlines()
    count = dev.device_count()
    bad_index = f"RuntimeError invalid device index 99 for '{DEVICE}': {count} device(s) available"
    assert lines[:3] == [f"{case} {bad_index}" for case in ("empty", "to", "set_device")]
    assert lines[3].startswith(f"huge OutOfMemoryError {DEVICE}:0 out of memory. Tried to allocate 65536.00 GiB")
    assert lines[4:] == ["2.0"]


def test_lazy_initialisation():
    module = f"torch.get_device_module({DEVICE!r})"
    code = f"import torch; a = {module}.is_initialized(); torch.ones(1, device={DEVICE!r})"
    out = run(code + f"; print(a, {module}.is_initialized())")
    assert out.stdout.split() == ["False", "True"], out.stderr
    out = run(f"import torch; {module}.init(); print({module}.is_initialized())")
    assert out.stdout.strip() == "True", out.stderr


def test_forked_child_after_init_gets_a_clear_error():
    code = (
        "import os, torch\n"
        f"x = torch.ones(2, device={DEVICE!r})\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    try:\n"
        f"        torch.ones(2, device={DEVICE!r})\n"
        "    except RuntimeError as e:\n"
        "        print('child:', e, flush=True)\n"
        "    os._exit(0)\n"
        "assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0, 'child failed'\n"
        "print('parent:', x.sum().item())\n"
    )
    out = run(code)
    assert f"child: Cannot re-initialize {DEVICE} in forked subprocess" in out.stdout, out.stderr
    assert "'spawn' start method" in out.stdout
    assert "parent: 2.0" in out.stdout


def test_fork_before_init_can_use_the_device():
    code = (
        "import os, torch\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        f"    print('child:', torch.ones(3, device={DEVICE!r}).sum().item(), flush=True)\n"
        "    os._exit(0)\n"
        "assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0, 'child failed'\n"
    )
    out = run(code)
    assert "child: 3.0" in out.stdout, out.stderr


def test_accelerator_api():
    assert torch.accelerator.current_accelerator() == torch.device(DEVICE)
    last = dev.device_count() - 1
    torch.accelerator.set_device_index(last)
    try:
        assert torch.accelerator.current_device_index() == last
        assert dev.current_device() == last
    finally:
        torch.accelerator.set_device_index(0)
    torch.accelerator.synchronize()
    assert torch.accelerator.current_stream().device == torch.device(on(0))


def test_generated_tensor_module_and_storage_methods():
    t = torch.ones(2)
    moved = getattr(t, DEVICE)()
    assert getattr(moved, f"is_{DEVICE}") and not getattr(t, f"is_{DEVICE}")
    module = getattr(torch.nn.Linear(2, 2), DEVICE)()
    assert module.weight.device == torch.device(on(0))
    storage = getattr(t.untyped_storage(), DEVICE)()
    assert storage.device == torch.device(on(0))


def test_properties_are_consistent():
    for index in range(dev.device_count()):
        props = dev.get_device_properties(index)
        assert props.name and dev.get_device_name(on(index)) == props.name
        assert props.total_memory > 0 and props.total_memory == dev.mem_get_info(index)[1]
        if props.major >= 0:
            assert dev.get_device_capability(on(index)) == (props.major, props.minor)
        else:  # a runtime without numbers (an Ascend SoC name): a clear error, as documented
            with pytest.raises(RuntimeError, match="no numeric capability"):
                dev.get_device_capability(on(index))
    assert set(dev.get_amp_supported_dtype()) <= {torch.float16, torch.bfloat16}


def test_accelerator_capability_lists_every_dtype():
    # torch.accelerator's form: the dtypes tensors may have (all: copies are dtype-blind and
    # the CPU fallback runs any op the backend has no kernel for).
    supported = torch.accelerator.get_device_capability(on(0))["supported_dtypes"]
    assert {torch.float32, torch.float64, torch.bfloat16, torch.int8, torch.bool, torch.complex64} <= supported
    for dtype in (torch.float64, torch.complex64, torch.int8):
        assert torch.ones(2, dtype=dtype, device=DEVICE).sum().item() == 2
    with pytest.raises(RuntimeError, match="invalid device index 99"):
        torch.accelerator.get_device_capability(on(99))


@pytest.mark.device_alone
def test_memory_comes_from_the_runtime_and_is_cached():
    dev.synchronize()
    dev.empty_cache()
    free_before, _ = dev.mem_get_info(0)
    x = torch.empty(16 << 20, dtype=torch.uint8, device=on(0))
    free_during, _ = dev.mem_get_info(0)
    assert free_before - free_during >= 16 << 20  # a segment of the runtime's memory
    del x
    assert dev.mem_get_info(0)[0] == free_during  # cached, not returned
    dev.empty_cache()
    assert dev.mem_get_info(0)[0] == free_before
