"""Streams and events on the fake device: real asynchrony and CUDA's ordering rules."""

import pytest
import torch

SLEEP_US = 200_000  # long enough that "still running" is observable, short for CI


def test_stream_objects_and_current_stream():
    default = torch.fake.current_stream()
    assert default == torch.fake.default_stream() and default.stream_id == 0
    s = torch.fake.Stream()
    assert isinstance(s, torch.Stream) and s.device == torch.device("fake:0") and s.stream_id != 0
    with torch.fake.stream(s):
        assert torch.fake.current_stream() == s
        assert torch.accelerator.current_stream() == s
    assert torch.fake.current_stream() == default
    torch.fake.set_stream(s)
    try:
        assert torch.fake.current_stream() == s
    finally:
        torch.fake.set_stream(default)


def test_priorities():
    least, greatest = torch.fake.Stream.priority_range()
    assert (least, greatest) == (0, -1)
    high = torch.fake.Stream(priority=-1)
    low = torch.fake.Stream(priority=0)
    assert high.stream_id != low.stream_id


def test_stream_on_second_device():
    s = torch.fake.Stream("fake:1")
    assert s.device_index == 1
    with torch.fake.stream(s):
        assert torch.fake.current_device() == 1
        assert torch.empty(1, device="fake").device.index == 1
    assert torch.fake.current_device() == 0


def test_query_is_false_while_work_runs():
    s = torch.fake.Stream()
    with torch.fake.stream(s):
        torch.fake._sleep(SLEEP_US)
    assert not s.query()
    s.synchronize()
    assert s.query()


def test_events_time_and_complete_in_order():
    start = torch.fake.Event(enable_timing=True)
    end = torch.fake.Event(enable_timing=True)
    s = torch.fake.Stream()
    with torch.fake.stream(s):
        start.record()
        torch.fake._sleep(SLEEP_US)
        end.record()
    assert not end.query()
    end.synchronize()
    assert start.query() and end.query()
    assert start.elapsed_time(end) >= SLEEP_US / 1000 * 0.9


def test_elapsed_time_needs_timing_events():
    a, b = torch.fake.Event(), torch.fake.Event()
    a.record()
    b.record()
    b.synchronize()
    with pytest.raises(ValueError, match="enable_timing"):
        a.elapsed_time(b)


def test_cross_stream_wait_holds_only_the_waiting_stream():
    producer, consumer, bystander = torch.fake.Stream(), torch.fake.Stream(), torch.fake.Stream()
    with torch.fake.stream(producer):
        torch.fake._sleep(SLEEP_US)
    consumer.wait_stream(producer)
    with torch.fake.stream(consumer):
        marker = torch.fake.Event()
        marker.record()
    assert not marker.query() and not consumer.query()
    assert bystander.query()
    marker.synchronize()
    assert producer.query()


def test_non_blocking_copy_completes_later_and_in_stream_order():
    src = torch.arange(1 << 20, dtype=torch.float32).pin_memory()
    s = torch.fake.Stream()
    with torch.fake.stream(s):
        torch.fake._sleep(SLEEP_US)
        dst = src.to("fake", non_blocking=True)
        assert not s.query()  # the copy waits behind the sleep
        # Work on the same stream sees the copied data.
        total = dst.sum()
    # As with CUDA, reading the result on another stream needs the wait
    # (the device-kernel path runs the sum on s; item() reads on the default).
    torch.fake.current_stream().wait_stream(s)
    assert total.item() == src.sum().item()


def test_device_to_host_non_blocking_into_pinned_memory():
    x = torch.randn(4096, device="fake")
    out = torch.empty(4096).pin_memory()
    s = torch.fake.current_stream()
    torch.fake._sleep(SLEEP_US)
    out.copy_(x, non_blocking=True)
    assert not s.query()
    torch.fake.synchronize()
    assert torch.equal(out, x.cpu())


def test_blocking_copy_waits_for_pending_work():
    x = torch.randn(1024, device="fake")
    torch.fake._sleep(SLEEP_US)
    y = x.cpu()  # blocking: returns only when the copy is done
    assert torch.fake.current_stream().query()
    assert y.shape == (1024,)


def test_synchronize_waits_for_every_stream():
    streams = [torch.fake.Stream() for _ in range(3)]
    for s in streams:
        with torch.fake.stream(s):
            torch.fake._sleep(SLEEP_US // 2)
    torch.fake.synchronize()
    assert all(s.query() for s in streams)


def test_stream_context_restores_device_and_streams():
    s1 = torch.fake.Stream("fake:1")
    before0 = torch.fake.current_stream(0)
    with torch.fake.StreamContext(s1) as entered:
        assert entered == s1
        assert torch.fake.current_device() == 1
        assert torch.fake.current_stream(1) == s1
    assert torch.fake.current_device() == 0
    assert torch.fake.current_stream(0) == before0
    assert torch.fake.current_stream(1) == torch.fake.default_stream(1)
    with torch.fake.StreamContext(None) as nothing:
        assert nothing is None


def test_event_wait_orders_another_stream():
    producer, consumer = torch.fake.Stream(), torch.fake.Stream()
    with torch.fake.stream(producer):
        torch.fake._sleep(SLEEP_US)
        done = torch.fake.Event()
        done.record()
    done.wait(consumer)
    assert not consumer.query()
    consumer.synchronize()
    assert done.query()


def test_device_of_selects_the_tensor_device():
    x = torch.ones(1, device="fake:1")
    with torch.fake.device_of(x):
        assert torch.fake.current_device() == 1
    with torch.fake.device_of(torch.ones(1)):
        assert torch.fake.current_device() == 0
