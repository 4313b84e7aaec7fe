"""Streams and events: thin subclasses of torch.Stream / torch.Event, which
reach core's device guard, plus torch.cuda's stream helpers."""

from __future__ import annotations

from typing import Any

import torch

from torch_backend import _C
from torch_backend._device_module._devices import _index, _name

__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "_sleep",
    "current_stream",
    "default_stream",
    "set_stream",
    "stream",
]


class Stream(torch.Stream):
    """An in-order queue of work on one device, like ``torch.cuda.Stream``.

    ``priority``: lower is more urgent; ``torch.<device>.Stream.priority_range()``
    gives the range.
    """

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> Stream:
        if {"stream_id", "device_index", "device_type"} <= kwargs.keys():
            return super().__new__(cls, **kwargs)
        target = torch.device(_name(), _index(device))
        if torch.compiler.is_compiling():
            # Dynamo creates streams of torch's own classes only: the same
            # stream, as a plain torch.Stream, inside compiled code.
            return torch.Stream(device=target, priority=priority)  # type: ignore[return-value]
        with torch.device(target):
            return super().__new__(cls, device=target, priority=priority)

    @staticmethod
    def priority_range() -> tuple[int, int]:
        return tuple(_C.stream_priority_range())

    def wait_stream(self, stream: torch.Stream) -> None:
        """Work enqueued later on self waits for all work now enqueued on ``stream``."""
        self.wait_event(stream.record_event())

    def record_event(self, event: torch.Event | None = None) -> torch.Event:
        event = Event() if event is None else event
        event.record(self)
        return event


def _wrap(raw: torch.Stream) -> Stream:
    return Stream(stream_id=raw.stream_id, device_index=raw.device_index, device_type=raw.device_type)


class Event(torch.Event):
    """A marker in a stream, like ``torch.cuda.Event``.

    Instances are plain ``torch.Event`` objects on this device: PyTorch's event
    methods accept only that exact type. ``record()``/``wait()`` default to the
    current stream.
    """

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> torch.Event:
        if interprocess:
            raise NotImplementedError("interprocess events are not supported")
        return torch.Event(device=_name(), enable_timing=enable_timing, blocking=blocking)


def current_stream(device: Any = None) -> Stream:
    return _wrap(torch.accelerator.current_stream(torch.device(_name(), _index(device))))


def default_stream(device: Any = None) -> Stream:
    index = _index(device)
    return Stream(stream_id=0, device_index=index, device_type=current_stream(index).device_type)


def set_stream(stream: torch.Stream | None) -> None:
    """Make ``stream`` current on its device (None: no-op, as in torch.cuda)."""
    if stream is not None:
        torch.accelerator.set_stream(stream)


class StreamContext:
    """Selects ``stream`` (and its device) for the block, restoring both afterwards."""

    def __init__(self, stream: torch.Stream | None) -> None:
        self.stream = stream
        self.prev_device = -1
        self.prev_streams: list[torch.Stream] = []

    def __enter__(self) -> torch.Stream | None:
        if self.stream is None:
            return None
        self.prev_device = _C.current_device()
        # Like torch.cuda: restore the current stream of both devices involved.
        self.prev_streams = [current_stream(self.prev_device), current_stream(self.stream.device_index)]
        _C.set_device(self.stream.device_index)
        torch.accelerator.set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.stream is None:
            return
        for previous in reversed(self.prev_streams):
            torch.accelerator.set_stream(previous)
        _C.set_device(self.prev_device)


def stream(stream: torch.Stream | None) -> StreamContext:
    """``with torch.<device>.stream(s):`` runs the block's work on ``s``."""
    return StreamContext(stream)


def _sleep(microseconds: int) -> None:
    """Keep the current stream busy for about ``microseconds`` (for tests, like torch.cuda._sleep)."""
    _index()
    _C._sleep(int(microseconds))
