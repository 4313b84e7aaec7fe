"""What every code generator core registers with Inductor shares: the registration's parts
(``InductorCodegen``), the device's calls in generated wrapper code, and the cache-key pass.

The bottom of the Inductor modules: ``inductor`` chooses a code generator and
registers it, ``host_codegen`` and ``triton_codegen`` build one each, and
all of them import this module, never each other upwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class InductorCodegen:
    """Inductor's code generators for one device (what ``register_backend_for_device`` takes).

    ``device_op_overrides`` (an ``Inductor DeviceOpOverrides``) names the
    device's Python calls in generated wrapper code: device guard, streams,
    synchronize.
    """

    scheduling: Any
    python_wrapper: Any
    cpp_wrapper: Any
    fx_wrapper: Any = None  # default: Inductor's own (device-neutral)
    device_op_overrides: Any = None


def python_wrapper_with(mixin: type | None, name: str) -> type:
    """Inductor's Python wrapper code generator with ``mixin`` first in its bases, for graphs and
    their subgraphs alike (``create`` picks the subgraph form, as Inductor's own does).

    Every one replays its graphs through device graphs under ``mode="reduce-overhead"``
    (``replay.ReplayThroughGraphs``)."""
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen

    from torch_backend._compile.replay import ReplayThroughGraphs

    mixins = (ReplayThroughGraphs,) if mixin is None else (mixin, ReplayThroughGraphs)
    subgraph_wrapper = type(f"{name}Subgraph", (*mixins, SubgraphPythonWrapperCodegen), {})

    def create(
        is_subgraph: bool, subgraph_name: str | None, parent_wrapper: Any, partition_signatures: Any = None
    ) -> PythonWrapperCodegen:
        if is_subgraph:
            return subgraph_wrapper(subgraph_name, parent_wrapper, partition_signatures)
        return wrapper()

    wrapper = type(name, (*mixins, PythonWrapperCodegen), {"create": staticmethod(create)})
    return wrapper


def device_op_overrides(device_name: str) -> Any:
    """How generated wrapper code names the device's calls: guard, streams, synchronize."""
    from torch._inductor.codegen.common import DeviceOpOverrides

    module = f"torch.{device_name}"

    class BackendDeviceOps(DeviceOpOverrides):
        def import_get_raw_stream_as(self, name: str) -> str:
            return f"from torch_backend._compile.codegen import raw_stream as {name}"

        def set_device(self, device_idx: int) -> str:
            return f"{module}.set_device({device_idx})"

        def synchronize(self) -> str:
            return f"{module}.synchronize()"

        def device_guard(self, device_idx: int) -> str:
            return f"{module}.device({device_idx})"

        def current_stream(self) -> str:
            return f"{module}.current_stream()"

    return BackendDeviceOps()


def raw_stream(device_index: int) -> int:
    """The current stream's native handle on ``device_index`` (what generated code calls
    get_raw_stream): the runtime's own stream (a ``cudaStream_t`` on gpu), on which Triton's
    launcher starts generated kernels, in order with the backend's own kernels and copies."""
    import torch

    return torch.accelerator.current_stream(device_index).native_handle


def codegen_identity(identity: str) -> Any:
    """A post-grad pass that changes nothing and names the code generator in Inductor's cache key."""
    from torch._inductor.custom_graph_pass import CustomGraphModulePass

    class CodegenIdentity(CustomGraphModulePass):
        def __call__(self, gm: Any) -> None:
            pass

        def uuid(self) -> str:
            return identity

    return CodegenIdentity()
