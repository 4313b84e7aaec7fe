"""Core's caching allocator seen from Python: statistics, cache, limits, torch.accelerator."""

import pickle

import pytest
import torch

from torch_backend.bench import fragmentation
from torch_backend.testing import run_python
from torch_backend.testing.conformance._support import DEVICE, dev, needs_stream_sleep, on


@pytest.fixture(autouse=True)
def clean_cache():
    dev.synchronize()
    dev.empty_cache()
    dev.reset_peak_memory_stats()
    yield


def test_allocated_counts_rounded_bytes_and_peaks():
    base = dev.memory_allocated()
    x = torch.empty(1000, dtype=torch.uint8, device=DEVICE)  # rounds to 1024
    assert dev.memory_allocated() - base == 1024
    y = torch.empty(3 << 20, dtype=torch.uint8, device=DEVICE)
    peak = dev.max_memory_allocated()
    del x, y
    assert dev.memory_allocated() == base
    assert dev.max_memory_allocated() == peak >= base + 1024 + (3 << 20)
    dev.reset_peak_memory_stats()
    assert dev.max_memory_allocated() == base


def test_active_memory_returns_to_what_is_allocated():
    # Freed blocks stop being active once no stream uses them (torch.cuda's meaning),
    # however often small blocks are reused.
    base = dev.memory_stats()
    for size in (100, 1000, 100_000, 100, 3 << 20):
        for _ in range(50):
            x = torch.empty(size, device=DEVICE)
            del x
    dev.synchronize()
    stats = dev.memory_stats()
    for key in ("active_bytes.all.current", "active.all.current", "allocated_bytes.all.current"):
        assert stats[key] == base[key], key
    assert stats["active_bytes.all.current"] == stats["allocated_bytes.all.current"]


@pytest.mark.device_alone
def test_freed_memory_stays_reserved_until_empty_cache():
    x = torch.empty(4 << 20, dtype=torch.uint8, device=DEVICE)
    reserved = dev.memory_reserved()
    assert dev.max_memory_reserved() >= reserved
    assert reserved >= 4 << 20
    del x
    assert dev.memory_reserved() == reserved
    free_cached, _ = dev.mem_get_info()
    dev.empty_cache()
    assert dev.memory_reserved() < reserved
    assert dev.mem_get_info()[0] > free_cached


def test_reuse_does_not_call_the_runtime():
    torch.empty(1 << 16, device=DEVICE)
    before = dev.memory_stats()["num_device_alloc"]
    for _ in range(100):
        torch.empty(1 << 16, device=DEVICE)
    assert dev.memory_stats()["num_device_alloc"] == before


def test_memory_stats_keys_match_torch_cuda():
    x = torch.empty(10, device=DEVICE)
    stats = dev.memory_stats()
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
    assert "Allocated memory" in dev.memory_summary()


def test_accelerator_memory_api_reads_the_same_allocator():
    x = torch.empty(2048, device=DEVICE)
    assert torch.accelerator.memory_allocated() == dev.memory_allocated()
    assert torch.accelerator.memory_reserved() == dev.memory_reserved()
    del x


def test_per_device_accounting():
    last = dev.device_count() - 1  # another device than the current one, where there are two
    before = dev.memory_allocated(last)
    x = torch.empty(1024, dtype=torch.uint8, device=on(last))
    assert dev.memory_allocated(last) - before == 1024
    assert dev.memory_allocated(on(last)) == dev.memory_allocated(last)
    del x


def test_memory_fraction_limits_reservation():
    last = dev.device_count() - 1
    total = dev.get_device_properties(last).total_memory
    dev.set_per_process_memory_fraction(0.001, last)
    try:
        with pytest.raises(torch.OutOfMemoryError, match="memory fraction"):
            torch.empty(int(total * 0.002), dtype=torch.uint8, device=on(last))
        assert dev.memory_stats(last)["num_ooms"] >= 1
    finally:
        dev.set_per_process_memory_fraction(1.0, last)
    with pytest.raises(ValueError, match="invalid fraction"):
        dev.set_per_process_memory_fraction(1.5)
    with pytest.raises(TypeError):
        dev.set_per_process_memory_fraction(1)


def test_alloc_conf_max_split_size():
    code = (
        "import torch\n"
        f"x = torch.empty(30 << 20, dtype=torch.uint8, device={DEVICE!r})\n"
        f"s = torch.get_device_module({DEVICE!r}).memory_stats()\n"
        "print(s['max_split_size'] >> 20, s['oversize_allocations.current'], s['oversize_segments.current'])\n"
    )
    out = run_python(code, PYTORCH_ALLOC_CONF="max_split_size_mb:20")
    assert out.stdout.split() == ["20", "1", "1"], out.stderr


@needs_stream_sleep
def test_record_stream_protects_memory_used_on_another_stream():
    side = dev.Stream()
    x = torch.empty(1 << 16, device=DEVICE)
    ptr = x.data_ptr()
    with dev.stream(side):
        dev._sleep(200_000)
    x.record_stream(side)
    del x
    # While `side` may still use it, the block is not handed out again.
    y = torch.empty(1 << 16, device=DEVICE)
    assert y.data_ptr() != ptr
    side.synchronize()
    y_ptr = y.data_ptr()
    del y
    device_allocs = dev.memory_stats()["num_device_alloc"]
    z = torch.empty(1 << 16, device=DEVICE)
    w = torch.empty(1 << 16, device=DEVICE)
    # Once `side` is done, both blocks are free and reused: no new segment.
    assert {z.data_ptr(), w.data_ptr()} == {ptr, y_ptr}
    assert dev.memory_stats()["num_device_alloc"] == device_allocs


# --- history and snapshots (torch.<device>.memory, as torch.cuda.memory) ---


def _train_a_little() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)).to(DEVICE)
    optimizer = torch.optim.Adam(model.parameters())
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.randn(32, 64, device=DEVICE)).square().mean().backward()
        optimizer.step()
    dev.synchronize()


def test_snapshot_of_a_training_run_renders_in_pytorchs_memory_viz(tmp_path) -> None:
    from torch.cuda import _memory_viz

    dev.memory._record_memory_history(max_entries=100_000)
    try:
        _train_a_little()
        kept = torch.randn(1000, 1000, device=DEVICE)
        snapshot = dev.memory._snapshot()
    finally:
        dev.memory._record_memory_history(enabled=None)

    segments = [s for s in snapshot["segments"] if s["device"] == 0]
    assert sum(s["total_size"] for s in segments) == dev.memory_reserved(0)
    assert sum(s["allocated_size"] for s in segments) == dev.memory_allocated(0)
    for segment in segments:
        assert sum(b["size"] for b in segment["blocks"]) == segment["total_size"]
        addresses = [b["address"] for b in segment["blocks"]]
        assert addresses == sorted(addresses) and addresses[0] == segment["address"]
    kept_block = next(b for s in segments for b in s["blocks"] if b["address"] == kept.data_ptr())
    assert kept_block["state"] == "active_allocated"
    assert kept_block["requested_size"] == kept.numel() * kept.element_size()
    assert any(frame["filename"] == __file__ for frame in kept_block["frames"])

    trace = snapshot["device_traces"][0]
    actions = {entry["action"] for entry in trace}
    assert {"alloc", "free_requested", "free_completed"} <= actions
    allocs = [e for e in trace if e["action"] == "alloc"]
    assert any(frame["name"] == "_train_a_little" for e in allocs for frame in e["frames"])

    # PyTorch's visualiser reads it; the dumped pickle is the same data.
    assert "<html" in _memory_viz.trace_plot(snapshot).lower()
    assert "<html" in _memory_viz.segment_plot(snapshot).lower()
    path = tmp_path / "snapshot.pickle"
    dev.memory._record_memory_history()
    dev.memory._dump_snapshot(str(path))
    dev.memory._record_memory_history(enabled=None)
    with open(path, "rb") as f:
        dumped = pickle.load(f)
    assert {"segments", "device_traces"} <= dumped.keys()
    del kept


def test_history_stops_and_state_mode_keeps_no_trace() -> None:
    dev.memory._record_memory_history(enabled="state")
    try:
        x = torch.randn(256, device=DEVICE)
        snapshot = dev.memory._snapshot()
    finally:
        dev.memory._record_memory_history(enabled=None)
    assert all(len(trace) == 0 for trace in snapshot["device_traces"])
    block = next(b for s in snapshot["segments"] for b in s["blocks"] if b["address"] == x.data_ptr())
    assert block["frames"], "state mode still records where live blocks were allocated"
    y = torch.randn(256, device=DEVICE)
    after = dev.memory._snapshot()
    assert all(len(trace) == 0 for trace in after["device_traces"])
    block = next(b for s in after["segments"] for b in s["blocks"] if b["address"] == y.data_ptr())
    assert block["frames"] == []


@pytest.mark.parametrize(
    "kwargs",
    [{"enabled": "sometimes"}, {"context": "everything"}, {"stacks": "cpp"}, {"max_entries": -1}],
)
def test_record_memory_history_rejects_bad_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        dev.memory._record_memory_history(**kwargs)


def test_memory_summary_reports_what_the_allocator_holds() -> None:
    dev.empty_cache()
    before = dev.memory_allocated()  # what earlier tests still hold
    x = torch.empty(3 << 20, dtype=torch.uint8, device=DEVICE)
    assert dev.memory_allocated() - before == 3 << 20
    summary = dev.memory.memory_summary()
    allocated_row = next(line for line in summary.splitlines() if line.startswith("Allocated memory"))
    assert f"{dev.memory_allocated() / 2**20:.2f} MiB" in allocated_row, allocated_row
    for title in ("Reserved memory", "Allocations", "Reserved segments", "Device allocs"):
        assert title in summary
    del x


def test_expandable_segments_survive_fragmentation_that_ordinary_segments_do_not():
    # The workload (torch_backend.bench.fragmentation) needs about 200 MiB at once; ordinary segments
    # fill 370 MiB with holes, expandable ones give the holes' pages back.
    limit = 320
    ordinary = fragmentation.run(expandable=False, limit_mib=limit)
    assert ordinary["oom"] is not None and "reserved by PyTorch but unallocated" in ordinary["oom"], ordinary
    expandable = fragmentation.run(expandable=True, limit_mib=limit)
    if not expandable["supported"]:
        pytest.skip(f"{DEVICE}'s runtime has no virtual memory calls (DeviceRuntime::vm_*): no expandable segments")
    assert expandable["oom"] is None, expandable
    assert expandable["expandable"] == [True], expandable
    assert expandable["peak_allocated"] <= expandable["peak_reserved"] <= limit << 20, expandable
    assert expandable["reserved_after_empty_cache"] == 0, expandable
