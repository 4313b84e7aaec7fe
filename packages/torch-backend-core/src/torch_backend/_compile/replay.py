"""``torch.compile(mode="reduce-overhead")`` on the device: Inductor's compiled graphs
replayed through core's graphs (``torch.<device>.Graph``).

Inductor wraps compiled code in CUDA graphs for CUDA only (its graph trees call
``torch.cuda`` by name). For the backend's device, the wrapper code that core's
code generators write ends, when ``triton.cudagraphs`` is on (what
``reduce-overhead`` sets), by handing the compiled ``call`` to
``replayed_call``: the first call runs as compiled (warm-up), the second
captures it into a graph, and later calls replay the graph. A graph that cannot
be captured (its kernels run on the host, it also computes on the CPU, dynamic
shapes, an op that a capture refuses) runs as compiled, and says why once.

How inputs and outputs are treated, as CUDA graph trees treat them:

- An input is read where it lies when its memory is stable: the compiled
  code mutates it, it kept its address between the warm-up and the capture
  (parameters, buffers), or it is a replayed graph's output (a forward graph's
  saved activations, read by the backward graph). Every replay checks those
  addresses; one that moved makes the graph be captured again (at most
  ``MAX_CAPTURES`` times, then the compiled code runs as compiled, with a
  warning). Other inputs are copied into the graph's own input tensors.
- Outputs live in the graph's private memory pool and are overwritten by the
  next replay. Each replay lends them through storages of their own; the
  next replay of the same graph revokes those still held, so reading one (or a
  view of it) raises an error naming the cause, never a stale or newer value.
"""

from __future__ import annotations

import warnings
import weakref
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import torch

__all__ = ["ReplayThroughGraphs", "graph_replay_counts", "release_compiled_graphs", "replayed_call"]

# How many times one compiled graph may be captured (its stable inputs moved)
# before it runs without device graphs.
MAX_CAPTURES = 8

_counts: Counter[str] = Counter()

# Storage addresses of every replayed graph's outputs, read where they lie
# when another compiled graph (the backward) takes them as inputs.
_graph_output_storages: set[int] = set()


# Every replayer alive: Inductor keeps compiled modules (and so their replayers and graph pools) after
# torch._dynamo.reset(), which releases CUDA's graph trees only.
_replayers: weakref.WeakSet[ReplayedCall] = weakref.WeakSet()


def release_compiled_graphs() -> None:
    """Drop every compiled graph's device graph and its memory pool (outputs still held raise, as after
    a replay); a compiled function called again warms up and captures anew. What
    ``torch._dynamo.reset()`` does for CUDA graph trees."""
    for replayer in list(_replayers):
        replayer.release()


def graph_replay_counts() -> dict[str, int]:
    """Captures, replays and calls run without device graphs, since the process started."""
    return dict(_counts)


REVOKED = (
    "torch-backend: this tensor is an output of a compiled graph replayed with "
    "mode='reduce-overhead', and a later replay of that graph has overwritten it. "
    "Clone outputs that must outlive the next call (outside the compiled function), "
    "or compile without mode='reduce-overhead'."
)


class ReplayedCall:
    """A compiled graph's ``call(args)``, run through a device graph after one warm-up call."""

    def __init__(
        self, call: Callable[[list[Any]], Any], device_index: int, mutated_inputs: Sequence[int], name: str
    ) -> None:
        self.call = call
        self.device_index = device_index
        self.mutated_inputs = frozenset(mutated_inputs)
        self.name = name
        self.unusable: str | None = None
        self.warm_up_addresses: list[int | None] | None = None
        self.copied: set[int] = set()  # inputs that may not be read where they lie
        self.graph: Any = None
        self.captures = 0
        self.inputs: list[Any] = []  # what the graph reads: stable inputs, or its own copies
        self.addresses: list[int | None] = []
        self.outputs: Sequence[Any] = ()
        self.returned_as_is: set[int] = set()  # outputs that are views of stable inputs
        self.lent: list[Any] = []  # StorageWeakRef of the outputs lent by the last replay
        _replayers.add(self)

    def release(self) -> None:
        """Back to the state before warm-up: no graph, no pool, no copies of inputs."""
        self._release()
        self.inputs, self.addresses, self.copied = [], [], set()
        self.warm_up_addresses, self.captures = None, 0

    def __call__(self, args: list[Any]) -> Any:
        if self.unusable is not None:
            _counts["eager_calls"] += 1
            return self.call(args)
        if self.warm_up_addresses is None:
            self.warm_up_addresses = [_address(arg) for arg in args]
            return self.call(args)
        if self.graph is None or not self._inputs_still_fit(args):
            return self._capture_and_replay(args)
        for index in self.copied:
            self.inputs[index].copy_(args[index])
        args.clear()
        return self._replay()

    def _inputs_still_fit(self, args: list[Any]) -> bool:
        fit = True
        for index, (arg, captured) in enumerate(zip(args, self.inputs, strict=True)):
            if index in self.copied:
                continue
            if isinstance(arg, torch.Tensor):
                if arg.data_ptr() != self.addresses[index]:
                    if index not in self.mutated_inputs:
                        self.copied.add(index)
                    fit = False
            elif arg != captured:
                fit = False
        return fit

    def _capture_and_replay(self, args: list[Any]) -> Any:
        from torch_backend._device_module._graphs import Graph, graph

        if self.captures == MAX_CAPTURES:
            self._release()
            return self._give_up(
                args,
                f"its inputs' addresses kept changing ({MAX_CAPTURES} captures); keep parameters and buffers in place",
            )
        for index, arg in enumerate(args):
            if isinstance(arg, torch.Tensor) and not self._stable(index, arg):
                self.copied.add(index)
        # Copies first: an input may be an output this graph lent, revoked by the release.
        inputs = [self._graph_input(index, arg) for index, arg in enumerate(args)]
        self._release()
        self.inputs = inputs
        self.addresses = [_address(arg) for arg in self.inputs]
        self.graph = Graph()
        self.captures += 1
        try:
            with graph(self.graph, capture_error_mode="thread_local"):
                outputs = self.call(list(self.inputs))
        except Exception as error:  # any refusal: say why, run as compiled
            self.graph = None
            self.inputs = []
            return self._give_up(args, f"capturing it failed: {error}")
        _counts["captures"] += 1
        self.outputs = outputs if isinstance(outputs, (list, tuple)) else (outputs,)
        self.returned_as_is = self._outputs_viewing_stable_inputs()
        _graph_output_storages.update(
            output.untyped_storage().data_ptr()
            for index, output in enumerate(self.outputs)
            if isinstance(output, torch.Tensor) and index not in self.returned_as_is
        )
        # A capture records the work without running it: this call's results come from a replay.
        args.clear()
        return self._replay()

    def _stable(self, index: int, arg: torch.Tensor) -> bool:
        if index in self.mutated_inputs:
            return True
        if index in self.copied:
            return False
        storage = arg.untyped_storage().data_ptr()
        if any(
            isinstance(output, torch.Tensor) and output.untyped_storage().data_ptr() == storage
            for output in self.outputs
        ):
            return False  # this graph's own output, fed back: its memory is rewritten by the replay
        assert self.warm_up_addresses is not None
        warm_up_address = self.warm_up_addresses[index] if index < len(self.warm_up_addresses) else None
        return arg.data_ptr() == warm_up_address or storage in _graph_output_storages

    def _graph_input(self, index: int, arg: Any) -> Any:
        if index not in self.copied:
            return arg
        own = torch.empty_strided(arg.size(), arg.stride(), dtype=arg.dtype, device=arg.device)
        own.copy_(arg)
        return own

    def _outputs_viewing_stable_inputs(self) -> set[int]:
        """Outputs that are views of inputs read where they lie: returned as they are. (Views of
        the graph's own input copies are lent like its other outputs: the next call overwrites
        those copies.)"""
        stable_storages = {
            arg.untyped_storage().data_ptr()
            for index, arg in enumerate(self.inputs)
            if isinstance(arg, torch.Tensor) and index not in self.copied
        }
        return {
            index
            for index, output in enumerate(self.outputs)
            if isinstance(output, torch.Tensor) and output.untyped_storage().data_ptr() in stable_storages
        }

    def _replay(self) -> list[Any]:
        self._revoke_lent()
        self.graph.replay()
        _counts["replays"] += 1
        return self._lend()

    def _lend(self) -> list[Any]:
        from torch.multiprocessing.reductions import StorageWeakRef

        lent_storages: dict[int, Any] = {}
        lent: list[Any] = []
        for index, output in enumerate(self.outputs):
            if not isinstance(output, torch.Tensor) or index in self.returned_as_is:
                lent.append(output)
                continue
            storage = output.untyped_storage()
            alias_storage = lent_storages.get(storage.data_ptr())
            if alias_storage is None:
                alias_storage = torch._C._construct_storage_from_data_pointer(
                    storage.data_ptr(), output.device, storage.nbytes()
                )
                lent_storages[storage.data_ptr()] = alias_storage
                self.lent.append(StorageWeakRef(alias_storage))
            alias = torch.empty((0,), dtype=output.dtype, device=output.device)
            alias.set_(alias_storage, output.storage_offset(), output.size(), output.stride())
            lent.append(alias)
        return lent

    def _revoke_lent(self) -> None:
        from torch_backend import _C

        for weak in self.lent:
            held = torch.UntypedStorage._new_with_weak_ptr(weak.cdata)
            if held is not None:
                _C._revoke_storage_access(held._cdata, REVOKED)
        self.lent = []

    def _release(self) -> None:
        """Drops the graph (its pool goes back to the allocator) after revoking what it lent."""
        self._revoke_lent()
        for output in self.outputs:
            if isinstance(output, torch.Tensor):
                _graph_output_storages.discard(output.untyped_storage().data_ptr())
        self.outputs = ()
        if self.graph is not None:
            self.graph.reset()
            self.graph = None

    def _give_up(self, args: list[Any], reason: str) -> Any:
        self.unusable = reason
        warnings.warn(
            f"torch-backend: mode='reduce-overhead' runs the {self.name} without device graphs: {reason}",
            stacklevel=3,
        )
        _counts["eager_calls"] += 1
        return self.call(args)

    def __del__(self) -> None:
        try:
            self._release()
        except Exception:  # interpreter shutdown: nothing left to protect
            pass


def _address(arg: Any) -> int | None:
    return arg.data_ptr() if isinstance(arg, torch.Tensor) else None


def replayed_call(
    call: Callable[[list[Any]], Any],
    *,
    device_index: int,
    mutated_inputs: Sequence[int] = (),
    name: str = "compiled graph",
    unusable_reason: str | None = None,
) -> Callable[[list[Any]], Any]:
    """What generated wrapper code calls ``call`` through under ``reduce-overhead``."""
    if unusable_reason is not None:
        warnings.warn(
            f"torch-backend: mode='reduce-overhead' runs the {name} without device graphs: {unusable_reason}",
            stacklevel=2,
        )
        return call
    return ReplayedCall(call, device_index, mutated_inputs, name)


class ReplayThroughGraphs:
    """Mixin of every Python wrapper code generator core registers: under
    ``triton.cudagraphs`` the generated module's ``call`` replays through device graphs.

    Code generators whose kernels a capture cannot record override
    ``graph_capture_obstacle``.
    """

    def graph_capture_obstacle(self) -> str | None:
        """Why the generated code cannot be captured (None: it can)."""
        return None

    def generate_end(self, result: Any) -> None:
        super().generate_end(result)  # type: ignore[misc]
        from torch._inductor import config
        from torch._inductor.codegen.wrapper import SubgraphPythonWrapperCodegen
        from torch._inductor.virtualized import V

        if not config.triton.cudagraphs or isinstance(self, SubgraphPythonWrapperCodegen):
            return
        graph = V.graph
        device_types = set(graph.device_types) - {"meta"}
        device_name = torch._C._get_privateuse1_backend_name()
        if device_name not in device_types:
            return  # nothing on the device: nothing to replay
        kind = "backward graph" if graph.is_backward else "compiled graph"
        reason = _capture_obstacle(graph, device_types, device_name) or self.graph_capture_obstacle()
        device_index = next(iter(graph.device_idxs), 0) if graph.device_idxs else 0
        mutated = sorted(
            graph.graph_input_names.index(name) for name in graph.mutated_inputs if name in graph.graph_input_names
        )
        result.writeline("")
        result.writeline("from torch_backend._compile.replay import replayed_call")
        result.writeline(
            f"call = replayed_call(call, device_index={device_index}, mutated_inputs={tuple(mutated)!r}, "
            f"name={kind!r}, unusable_reason={reason!r})"
        )


def _capture_obstacle(graph: Any, device_types: set[str], device_name: str) -> str | None:
    from torch._inductor.utils import any_is_symbolic, get_first_incompatible_cudagraph_node

    if graph.disable_cudagraphs_reason:
        return str(graph.disable_cudagraphs_reason)
    if device_types != {device_name}:
        others = ", ".join(sorted(device_types - {device_name}))
        return f"it also computes on {others}"
    if graph.example_inputs is not None and any_is_symbolic(*graph.example_inputs):
        return "its inputs have dynamic shapes"
    node = get_first_incompatible_cudagraph_node(graph.orig_gm)
    if node is not None:
        return f"it calls {node.target}, which a graph cannot hold"
    return None
