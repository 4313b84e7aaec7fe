"""Caching allocator seen from Python: statistics, cache, limits, torch.accelerator."""

import os
import subprocess
import sys

import pytest
import torch


@pytest.fixture(autouse=True)
def clean_cache():
    torch.fake.synchronize()
    torch.fake.empty_cache()
    torch.fake.reset_peak_memory_stats()
    yield


def test_allocated_counts_rounded_bytes_and_peaks():
    base = torch.fake.memory_allocated()
    x = torch.empty(1000, dtype=torch.uint8, device="fake")  # rounds to 1024
    assert torch.fake.memory_allocated() - base == 1024
    y = torch.empty(3 << 20, dtype=torch.uint8, device="fake")
    peak = torch.fake.max_memory_allocated()
    del x, y
    assert torch.fake.memory_allocated() == base
    assert torch.fake.max_memory_allocated() == peak >= base + 1024 + (3 << 20)
    torch.fake.reset_peak_memory_stats()
    assert torch.fake.max_memory_allocated() == base


def test_freed_memory_stays_reserved_until_empty_cache():
    x = torch.empty(4 << 20, dtype=torch.uint8, device="fake")
    reserved = torch.fake.memory_reserved()
    assert torch.fake.max_memory_reserved() >= reserved
    assert reserved >= 4 << 20
    del x
    assert torch.fake.memory_reserved() == reserved
    free_cached, _ = torch.fake.mem_get_info()
    torch.fake.empty_cache()
    assert torch.fake.memory_reserved() < reserved
    assert torch.fake.mem_get_info()[0] > free_cached


def test_reuse_does_not_call_the_runtime():
    torch.empty(1 << 16, device="fake")
    before = torch.fake.memory_stats()["num_device_alloc"]
    for _ in range(100):
        torch.empty(1 << 16, device="fake")
    assert torch.fake.memory_stats()["num_device_alloc"] == before


def test_memory_stats_keys_match_torch_cuda():
    x = torch.empty(10, device="fake")
    stats = torch.fake.memory_stats()
    for key in (
        "allocated_bytes.all.current",
        "allocated_bytes.small_pool.peak",
        "reserved_bytes.large_pool.current",
        "active.all.current",
        "inactive_split_bytes.all.current",
        "requested_bytes.all.current",
        "num_alloc_retries",
        "num_ooms",
    ):
        assert key in stats
    assert stats["requested_bytes.all.current"] >= 40
    assert stats["allocation.all.current"] >= 1
    del x
    assert "Allocated memory" in torch.fake.memory_summary()


def test_accelerator_memory_api_reads_the_same_allocator():
    x = torch.empty(2048, device="fake")
    assert torch.accelerator.memory_allocated() == torch.fake.memory_allocated()
    assert torch.accelerator.memory_reserved() == torch.fake.memory_reserved()
    del x


def test_per_device_accounting():
    before = torch.fake.memory_allocated(1)
    x = torch.empty(1024, dtype=torch.uint8, device="fake:1")
    assert torch.fake.memory_allocated(1) - before == 1024
    assert torch.fake.memory_allocated("fake:1") == torch.fake.memory_allocated(1)
    del x


def test_memory_fraction_limits_reservation():
    total = torch.fake.get_device_properties(1).total_memory
    torch.fake.set_per_process_memory_fraction(0.001, 1)
    try:
        with pytest.raises(torch.OutOfMemoryError, match="memory fraction"):
            torch.empty(int(total * 0.002), dtype=torch.uint8, device="fake:1")
        assert torch.fake.memory_stats(1)["num_ooms"] >= 1
    finally:
        torch.fake.set_per_process_memory_fraction(1.0, 1)
    with pytest.raises(ValueError, match="invalid fraction"):
        torch.fake.set_per_process_memory_fraction(1.5)
    with pytest.raises(TypeError):
        torch.fake.set_per_process_memory_fraction(1)


def test_oom_retry_frees_the_cache():
    code = (
        "import torch\n"
        "x = torch.empty(40 << 20, dtype=torch.uint8, device='fake'); del x\n"
        "y = torch.empty(50 << 20, dtype=torch.uint8, device='fake')\n"
        "s = torch.fake.memory_stats()\n"
        "print(s['num_alloc_retries'], s['num_ooms'], s['reserved_bytes.all.current'] >> 20)\n"
    )
    env = os.environ | {"TORCH_BACKEND_FAKE_MEMORY_MB": "64"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "0", "50"], out.stderr


def test_alloc_conf_max_split_size():
    code = (
        "import torch\n"
        "x = torch.empty(30 << 20, dtype=torch.uint8, device='fake')\n"
        "s = torch.fake.memory_stats()\n"
        "print(s['max_split_size'] >> 20, s['oversize_allocations.current'], s['oversize_segments.current'])\n"
    )
    env = os.environ | {"PYTORCH_ALLOC_CONF": "max_split_size_mb:20"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["20", "1", "1"], out.stderr


def test_record_stream_protects_memory_used_on_another_stream():
    side = torch.fake.Stream()
    x = torch.empty(1 << 16, device="fake")
    ptr = x.data_ptr()
    with torch.fake.stream(side):
        torch.fake._sleep(200_000)
    x.record_stream(side)
    del x
    # While `side` may still use it, the block is not handed out again.
    y = torch.empty(1 << 16, device="fake")
    assert y.data_ptr() != ptr
    side.synchronize()
    y_ptr = y.data_ptr()
    del y
    device_allocs = torch.fake.memory_stats()["num_device_alloc"]
    z = torch.empty(1 << 16, device="fake")
    w = torch.empty(1 << 16, device="fake")
    # Once `side` is done, both blocks are free and reused: no new segment.
    assert {z.data_ptr(), w.data_ptr()} == {ptr, y_ptr}
    assert torch.fake.memory_stats()["num_device_alloc"] == device_allocs
