"""Graphs: capture a region of device work once, replay it with one launch
(``torch.cuda.graphs``' names and semantics, on every supported torch).

A backend takes part when its runtime implements the capture symbols of
``DeviceRuntime.h``; otherwise capturing raises ``NotImplementedError``.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import torch
from torch.utils import _pytree

from torch_backend import _C
from torch_backend._device_module._devices import _index, _name
from torch_backend._device_module._streams import Stream, StreamContext

__all__ = ["Graph", "graph", "graph_pool_handle", "is_current_stream_capturing", "make_graphed_callables"]

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


def make_graphed_callables(
    callables: Any,
    sample_args: tuple[Any, ...],
    num_warmup_iters: int = 3,
    allow_unused_input: bool = False,
    pool: tuple[int, int] | None = None,
) -> Any:
    """Graphed versions of ``callables`` (functions or modules): ``torch.cuda.make_graphed_callables``.

    Each callable's forward and backward are captured once, from ``sample_args``
    (a tuple of its arguments, or with several callables a tuple of such
    tuples), after ``num_warmup_iters`` eager warm-up iterations on a side
    stream; calling the result copies its tensor arguments into the captured
    ones and replays, and its backward replays the captured backward. Outputs
    are the graph's: the next replay overwrites them. The arguments must be
    tensors of the sample's shapes, dtypes and ``requires_grad``; a module's
    parameters are read in place. A module comes back with its ``forward``
    graphed while its ``training`` flag is what it was when captured.
    Several callables share one memory pool (their forwards captured in the
    order given, their backwards in reverse): call them in that order, as a
    model's layers run. ``pool``: share a pool given by ``graph_pool_handle()``.
    """
    if torch.is_autocast_enabled() and torch.is_autocast_cache_enabled():
        raise RuntimeError(
            "make_graphed_callables does not support the autocast cache: enter autocast with cache_enabled=False"
        )
    single = not isinstance(callables, tuple)
    if single:
        callables, sample_args = (callables,), (sample_args,)
    if len(callables) != len(sample_args):
        raise ValueError(f"got {len(callables)} callables but {len(sample_args)} sets of sample arguments")
    captures = [
        _GraphedCapture(function, args, allow_unused_input)
        for function, args in zip(callables, sample_args, strict=True)
    ]

    side = Stream(_index(None))
    side.wait_stream(torch.accelerator.current_stream())
    with StreamContext(side):
        for capture in captures:
            for _ in range(num_warmup_iters):
                capture.run_eagerly()
    torch.accelerator.current_stream().wait_stream(side)

    shared_pool = graph_pool_handle() if pool is None else pool
    for capture in captures:
        capture.capture_forward(shared_pool)
    for capture in reversed(captures):
        capture.capture_backward(shared_pool)
    graphed = tuple(capture.graphed() for capture in captures)
    return graphed[0] if single else graphed


class _GraphedCapture:
    """One callable of make_graphed_callables: its captured forward and backward."""

    def __init__(self, function: Callable[..., Any], sample_args: Any, allow_unused_input: bool) -> None:
        if isinstance(function, torch.nn.Module):
            for module in function.modules():
                if module._forward_hooks or module._forward_pre_hooks or module._backward_hooks:
                    raise RuntimeError(
                        "make_graphed_callables: modules must not have hooks registered when they are graphed"
                    )
            if any(buffer.requires_grad for buffer in function.buffers()):
                raise RuntimeError("make_graphed_callables: module buffers must not require grad")
            self.parameters: tuple[torch.Tensor, ...] = tuple(function.parameters())
        else:
            self.parameters = ()
        flat, self.args_spec = _pytree.tree_flatten(sample_args)
        if not all(isinstance(arg, torch.Tensor) for arg in flat):
            raise TypeError("make_graphed_callables: sample_args may hold only tensors")
        self.function = function
        self.sample_args = sample_args
        self.static_args: tuple[torch.Tensor, ...] = tuple(flat)
        self.allow_unused_input = allow_unused_input
        self.training = function.training if isinstance(function, torch.nn.Module) else None

    def _differentiable_inputs(self) -> tuple[torch.Tensor, ...]:
        return tuple(tensor for tensor in self.static_args + self.parameters if tensor.requires_grad)

    def _grads(self, outputs: tuple[torch.Tensor, ...], grad_outputs: tuple[torch.Tensor, ...]) -> Any:
        inputs = self._differentiable_inputs()
        if not inputs or not outputs:
            return ()
        return torch.autograd.grad(
            outputs, inputs, grad_outputs=grad_outputs, only_inputs=True, allow_unused=self.allow_unused_input
        )

    def run_eagerly(self) -> None:
        outputs = _pytree.tree_leaves(self.function(*self.sample_args))
        needing = tuple(output for output in outputs if isinstance(output, torch.Tensor) and output.requires_grad)
        self._grads(needing, tuple(torch.empty_like(output) for output in needing))

    def capture_forward(self, pool: tuple[int, int]) -> None:
        self.forward_graph = Graph()
        with graph(self.forward_graph, pool=pool):
            outputs = self.function(*self.sample_args)
        flat, self.output_spec = _pytree.tree_flatten(outputs)
        if not all(isinstance(output, torch.Tensor) for output in flat):
            raise TypeError("make_graphed_callables: the callables may return only tensors")
        self.static_outputs: tuple[torch.Tensor, ...] = tuple(flat)

    def capture_backward(self, pool: tuple[int, int]) -> None:
        self.static_grad_outputs = tuple(
            torch.empty_like(output) if output.requires_grad else None for output in self.static_outputs
        )
        needing = tuple(output for output in self.static_outputs if output.requires_grad)
        self.backward_graph = Graph()
        with graph(self.backward_graph, pool=pool):
            grads = iter(self._grads(needing, tuple(g for g in self.static_grad_outputs if g is not None)))
        # One entry per argument and parameter: its gradient, or None.
        self.static_grad_inputs = tuple(
            next(grads) if tensor.requires_grad else None for tensor in self.static_args + self.parameters
        )
        # The captured autograd graph is no longer needed (its nodes would stay bound to the capture stream).
        self.static_outputs = tuple(output.detach() for output in self.static_outputs)

    def graphed(self) -> Any:
        replay = self._autograd_function()
        parameters, arg_count = self.parameters, len(self.static_args)
        args_spec, output_spec = self.args_spec, self.output_spec

        def graphed_function(*args: Any) -> Any:
            flat, spec = _pytree.tree_flatten(args)
            if spec != args_spec or len(flat) != arg_count:
                raise TypeError(
                    f"a graphed callable takes arguments structured as its sample_args ({args_spec}), got {spec}"
                )
            return _pytree.tree_unflatten(list(replay.apply(*flat, *parameters)), output_spec)

        if not isinstance(self.function, torch.nn.Module):
            return graphed_function
        module, eager_forward, training = self.function, self.function.forward, self.training

        def forward(*args: Any) -> Any:
            # Graphed only in the training state it was captured in (as torch.cuda's).
            return graphed_function(*args) if module.training == training else eager_forward(*args)

        module.forward = forward
        return module

    def keep_accumulated_grads(self) -> None:
        """A parameter's ``.grad`` that is the backward graph's output (autograd keeps the first
        gradient it gets as ``.grad``), still held to accumulate into (``zero_grad(set_to_none=False)``,
        gradient accumulation), moves to memory of its own before a replay: the backward graph
        rewrites that memory, and the forward graph, sharing its pool, uses it for temporaries.
        (torch.cuda's leaves such a ``.grad`` where it is, and asks for ``set_to_none=True``.)"""
        for parameter, static in zip(self.parameters, self.static_grad_inputs[len(self.static_args) :], strict=True):
            held = parameter.grad
            if (
                static is not None
                and held is not None
                and held.untyped_storage().data_ptr() == static.untyped_storage().data_ptr()
            ):
                parameter.grad = held.clone()

    def _autograd_function(self) -> type[torch.autograd.Function]:
        capture = self
        arg_count = len(self.static_args)

        class Graphed(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
                for static, given in zip(capture.static_args, inputs[:arg_count], strict=True):
                    if static.data_ptr() != given.data_ptr():
                        static.copy_(given)
                capture.keep_accumulated_grads()
                capture.forward_graph.replay()
                return tuple(output.detach() for output in capture.static_outputs)

            @staticmethod
            @torch.autograd.function.once_differentiable
            def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
                for static, given in zip(capture.static_grad_outputs, grads, strict=True):
                    if static is not None and given is not None and static.data_ptr() != given.data_ptr():
                        static.copy_(given)
                capture.keep_accumulated_grads()
                capture.backward_graph.replay()
                return tuple(None if grad is None else grad.detach() for grad in capture.static_grad_inputs)

        return Graphed
