"""The generated ``torch.fake`` module: device count, selection, properties, memory."""

import os
import subprocess
import sys

import pytest
import torch


def run(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ | env)


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


def test_properties_and_names():
    props = torch.fake.get_device_properties(1)
    assert props.name == "Fake Device 1 (host memory)"
    assert props.total_memory == 65536 << 20
    assert torch.fake.get_device_name("fake:0") == "Fake Device 0 (host memory)"
    assert torch.fake.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]
    torch.fake.synchronize()


def test_memory_is_owned_by_the_fake_runtime():
    free_before, total = torch.fake.mem_get_info(1)
    x = torch.empty(16 << 20, dtype=torch.uint8, device="fake:1")
    free_during, _ = torch.fake.mem_get_info(1)
    assert free_before - free_during == 16 << 20
    assert torch.fake.mem_get_info(0)[0] == torch.fake.mem_get_info(0)[1] or torch.fake.mem_get_info(0)[0] <= total
    del x
    assert torch.fake.mem_get_info(1)[0] == free_before


def test_allocation_beyond_capacity_raises_out_of_memory():
    code = (
        "import torch\n"
        "try:\n"
        "    torch.empty(2 << 20, dtype=torch.uint8, device='fake')\n"
        "except torch.OutOfMemoryError as e:\n"
        "    print('OOM:', e)\n"
        "print(torch.empty(512 << 10, dtype=torch.uint8, device='fake').numel())\n"
    )
    out = run(code, TORCH_BACKEND_FAKE_MEMORY_MB="1")
    assert "OOM: fake:0 out of memory: tried to allocate 2097152 bytes" in out.stdout, out.stderr
    assert out.stdout.strip().endswith("524288")
