"""Streams and events: CUDA's ordering rules, and real asynchrony where the runtime can show it."""

import pytest
import torch

from torch_backend.testing.conformance._support import DEVICE, SLEEP_US, dev, needs_stream_sleep, needs_two_devices, on


def test_stream_objects_and_current_stream():
    default = dev.current_stream()
    assert default == dev.default_stream() and default.stream_id == 0
    s = dev.Stream()
    assert isinstance(s, torch.Stream) and s.device == torch.device(on(0)) and s.stream_id != 0
    with dev.stream(s):
        assert dev.current_stream() == s
        assert torch.accelerator.current_stream() == s
    assert dev.current_stream() == default
    dev.set_stream(s)
    try:
        assert dev.current_stream() == s
    finally:
        dev.set_stream(default)


def test_priorities():
    least, greatest = dev.Stream.priority_range()
    assert greatest <= least  # numerically lower is more urgent, as in CUDA
    high = dev.Stream(priority=greatest)
    low = dev.Stream(priority=least)
    assert high.stream_id != low.stream_id


@needs_two_devices
def test_stream_on_second_device():
    s = dev.Stream(on(1))
    assert s.device_index == 1
    with dev.stream(s):
        assert dev.current_device() == 1
        assert torch.empty(1, device=DEVICE).device.index == 1
    assert dev.current_device() == 0


def test_events_complete_and_time_work():
    start, end = dev.Event(enable_timing=True), dev.Event(enable_timing=True)
    s = dev.Stream()
    with dev.stream(s):
        start.record()
        x = torch.randn(256, 256, device=DEVICE)
        y = (x @ x).sum()
        end.record()
    end.synchronize()
    assert start.query() and end.query() and s.query()
    assert start.elapsed_time(end) >= 0
    dev.current_stream().wait_stream(s)
    x_cpu = x.cpu()
    torch.testing.assert_close(y.cpu(), (x_cpu @ x_cpu).sum(), rtol=1e-4, atol=1e-2)


def test_never_recorded_event_is_complete():
    assert dev.Event().query()
    dev.Event().synchronize()


def test_non_blocking_copies_on_a_side_stream_arrive_in_order():
    src = torch.arange(1 << 16, dtype=torch.float32).pin_memory()
    back = torch.empty_like(src).pin_memory()
    s = dev.Stream()
    with dev.stream(s):
        on_device = src.to(DEVICE, non_blocking=True)
        doubled = on_device * 2
        back.copy_(doubled, non_blocking=True)
    s.synchronize()
    assert torch.equal(back, src * 2)


@needs_stream_sleep
def test_query_is_false_while_work_runs():
    s = dev.Stream()
    with dev.stream(s):
        dev._sleep(SLEEP_US)
    assert not s.query()
    s.synchronize()
    assert s.query()


@needs_stream_sleep
def test_events_time_and_complete_in_order():
    start = dev.Event(enable_timing=True)
    end = dev.Event(enable_timing=True)
    s = dev.Stream()
    with dev.stream(s):
        start.record()
        dev._sleep(SLEEP_US)
        end.record()
    assert not end.query()
    end.synchronize()
    assert start.query() and end.query()
    assert start.elapsed_time(end) >= SLEEP_US / 1000 * 0.9


def test_elapsed_time_needs_timing_events():
    a, b = dev.Event(), dev.Event()
    a.record()
    b.record()
    b.synchronize()
    with pytest.raises(ValueError, match="enable_timing"):
        a.elapsed_time(b)


@needs_stream_sleep
def test_cross_stream_wait_holds_only_the_waiting_stream():
    producer, consumer, bystander = dev.Stream(), dev.Stream(), dev.Stream()
    with dev.stream(producer):
        dev._sleep(SLEEP_US)
    consumer.wait_stream(producer)
    with dev.stream(consumer):
        marker = dev.Event()
        marker.record()
    assert not marker.query() and not consumer.query()
    assert bystander.query()
    marker.synchronize()
    assert producer.query()


@needs_stream_sleep
def test_non_blocking_copy_completes_later_and_in_stream_order():
    src = torch.arange(1 << 20, dtype=torch.float32).pin_memory()
    s = dev.Stream()
    with dev.stream(s):
        dev._sleep(SLEEP_US)
        dst = src.to(DEVICE, non_blocking=True)
        assert not s.query()  # the copy waits behind the sleep
        # Work on the same stream sees the copied data.
        total = dst.sum()
    # As with CUDA, reading the result on another stream needs the wait
    # (the device-kernel path runs the sum on s; item() reads on the default).
    dev.current_stream().wait_stream(s)
    assert total.item() == src.sum().item()


@needs_stream_sleep
def test_device_to_host_non_blocking_into_pinned_memory():
    x = torch.randn(4096, device=DEVICE)
    out = torch.empty(4096).pin_memory()
    s = dev.current_stream()
    dev._sleep(SLEEP_US)
    out.copy_(x, non_blocking=True)
    assert not s.query()
    dev.synchronize()
    assert torch.equal(out, x.cpu())


@needs_stream_sleep
def test_blocking_copy_waits_for_pending_work():
    x = torch.randn(1024, device=DEVICE)
    dev._sleep(SLEEP_US)
    y = x.cpu()  # blocking: returns only when the copy is done
    assert dev.current_stream().query()
    assert y.shape == (1024,)


@needs_stream_sleep
def test_synchronize_waits_for_every_stream():
    streams = [dev.Stream() for _ in range(3)]
    for s in streams:
        with dev.stream(s):
            dev._sleep(SLEEP_US // 2)
    dev.synchronize()
    assert all(s.query() for s in streams)


@needs_two_devices
def test_stream_context_restores_device_and_streams():
    s1 = dev.Stream(on(1))
    before0 = dev.current_stream(0)
    with dev.StreamContext(s1) as entered:
        assert entered == s1
        assert dev.current_device() == 1
        assert dev.current_stream(1) == s1
    assert dev.current_device() == 0
    assert dev.current_stream(0) == before0
    assert dev.current_stream(1) == dev.default_stream(1)
    with dev.StreamContext(None) as nothing:
        assert nothing is None


@needs_stream_sleep
def test_event_wait_orders_another_stream():
    producer, consumer = dev.Stream(), dev.Stream()
    with dev.stream(producer):
        dev._sleep(SLEEP_US)
        done = dev.Event()
        done.record()
    done.wait(consumer)
    assert not consumer.query()
    consumer.synchronize()
    assert done.query()


@needs_two_devices
def test_device_of_selects_the_tensor_device():
    x = torch.ones(1, device=on(1))
    with dev.device_of(x):
        assert dev.current_device() == 1
    with dev.device_of(torch.ones(1)):
        assert dev.current_device() == 0
