"""Pinned host memory from core's caching host allocator."""

import torch

from torch_backend.testing.conformance._support import DEVICE, dev, needs_stream_sleep


def test_pin_memory_and_is_pinned():
    x = torch.randn(100)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and torch.equal(p, x)
    assert p[10:].is_pinned()  # views into a pinned block are pinned


def test_pinned_blocks_are_reused():
    p = torch.empty(1000).pin_memory()
    ptr = p.data_ptr()
    del p
    q = torch.empty(1000).pin_memory()
    assert q.data_ptr() == ptr


@needs_stream_sleep
def test_pinned_block_in_flight_is_not_reused():
    src = torch.randn(1 << 16).pin_memory()
    ptr = src.data_ptr()
    dev._sleep(200_000)
    dst = src.to(DEVICE, non_blocking=True)
    del src
    other = torch.empty(1 << 16).pin_memory()
    assert other.data_ptr() != ptr  # the copy may still read the old block
    dev.synchronize()
    assert dst.shape == (1 << 16,)
