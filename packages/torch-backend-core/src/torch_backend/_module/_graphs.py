"""Graphs: capture a region of device work once, replay it with one launch
(``torch.cuda.graphs``' names and semantics, on every supported torch).

A backend takes part when its runtime implements the capture symbols of
``DeviceRuntime.h``; otherwise capturing raises ``NotImplementedError``.
"""

from __future__ import annotations

import gc
from typing import ClassVar, Literal

import torch

from torch_backend import _C
from torch_backend._module._devices import _index, _name
from torch_backend._module._streams import Stream, StreamContext

__all__ = ["Graph", "graph", "graph_pool_handle", "is_current_stream_capturing"]

CaptureErrorMode = Literal["default", "global", "thread_local", "relaxed"]


class Graph(_C._Graph):
    """A captured region of device work (``torch.cuda.CUDAGraph``).

    ``capture_begin``/``capture_end`` record the work enqueued on the current
    stream (not the default stream) between them; ``replay()`` launches it again
    on the current stream, reading and writing the same memory: tensors made
    during the capture come from the graph's private memory pool and keep their
    addresses until ``reset()``. Random ops draw fresh numbers at each replay,
    as the same eager work would. ``keep_graph=True`` defers instantiation to
    ``instantiate()`` or the first replay.
    """

    def capture_begin(
        self, pool: tuple[int, int] | None = None, capture_error_mode: CaptureErrorMode = "global"
    ) -> None:
        """Begin capturing the current stream; ``pool`` shares another graph's or a handle's memory pool."""
        super().capture_begin(pool=pool, capture_error_mode=capture_error_mode)

    def pool(self) -> tuple[int, int]:
        """The id of this graph's memory pool, which another capture may share."""
        return tuple(super().pool())


class graph:  # noqa: N801 (torch.cuda.graph's name)
    """``with torch.<device>.graph(g):`` captures the block into ``g``.

    Synchronises the device, empties the cache, then captures on ``stream`` (by
    default a side stream kept per device, as torch.cuda's), restoring the
    current stream afterwards. ``pool``: a ``graph_pool_handle()`` or another
    graph's ``pool()`` to share memory with.
    """

    default_capture_streams: ClassVar[dict[int, Stream]] = {}

    def __init__(
        self,
        graph: Graph,
        pool: tuple[int, int] | None = None,
        stream: torch.Stream | None = None,
        capture_error_mode: CaptureErrorMode = "global",
    ) -> None:
        index = _index(None) if stream is None else stream.device_index
        if stream is None:
            stream = self.default_capture_streams.get(index)
            if stream is None:
                stream = self.default_capture_streams.setdefault(index, Stream(index))
        self.graph = graph
        self.pool = pool
        self.capture_stream = stream
        self.capture_error_mode = capture_error_mode
        self.stream_context = StreamContext(stream)

    def __enter__(self) -> None:
        torch.accelerator.synchronize(self.capture_stream.device_index)
        gc.collect()
        _C.empty_cache()
        self.stream_context.__enter__()
        try:
            self.graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_context.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            self.graph.capture_end()
        finally:
            self.stream_context.__exit__(*exc)


def graph_pool_handle() -> tuple[int, int]:
    """A memory pool id that graphs may share (``torch.cuda.graph_pool_handle``)."""
    return tuple(_C._graph_pool_handle())


def is_current_stream_capturing() -> bool:
    """Whether work enqueued on the current stream of the current device is being captured."""
    _name()
    return bool(_C._is_current_stream_capturing())
