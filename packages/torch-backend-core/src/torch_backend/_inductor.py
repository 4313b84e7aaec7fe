"""torch.compile's Inductor on the active backend.

Registered with Inductor (``register_backend_for_device``) when Inductor's
compiler is first imported, never at ``import torch``:

- a backend with its own code generator (``Backend.inductor``) gets it;
- a backend whose memory host code may dereference gets Inductor's C++ code
  generation, its kernels computing on device memory once the stream's queued
  work is done (``HostKernelWrapper``);
- any other backend gets no kernels of Inductor's: graphs whose every op
  Inductor leaves to ATen (``options={"fallback_by_default": True}``) run on
  the backend's eager kernels, and a graph that needs a generated kernel
  fails with a clear error naming that option and ``backend="aot_eager"``.

Which of these applies is part of Inductor's cache key (``CodegenIdentity``),
so compiled code cached for one kind of memory is never reused for another.
"""

from __future__ import annotations

from collections.abc import Callable
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


def register(device_name: str) -> None:
    """Register the active backend's Inductor code generators for ``device_name``."""
    from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides
    from torch._inductor.codegen.wrapper_fxir import WrapperFxCodegen

    from torch_backend._activation import active_backend

    backend = active_backend()
    kind = codegen_kind()
    if kind == "own":
        codegen, identity = backend.inductor(), f"{backend.name}-own"
    elif kind == "host-kernels":
        from torch_backend._inductor_host import host_kernel_codegen

        codegen, identity = host_kernel_codegen(device_name), "host-kernels"
    else:
        codegen, identity = no_codegen(device_name), "none"
    if codegen.device_op_overrides is not None:
        register_device_op_overrides(device_name, codegen.device_op_overrides)
    register_backend_for_device(
        device_name,
        codegen.scheduling,
        codegen.python_wrapper,
        codegen.cpp_wrapper,
        # FX wrapper code is device-neutral.
        codegen.fx_wrapper or WrapperFxCodegen,
        device_custom_pass=codegen_identity(f"torch-backend:{device_name}:{identity}"),
    )


def codegen_kind() -> str:
    """The active backend's code generator: ``own`` (``Backend.inductor``), ``host-kernels``
    (Inductor's C++ kernels, memory the host may address) or ``none``."""
    from torch_backend import _C
    from torch_backend._activation import active_backend

    backend = active_backend()
    if backend is not None and backend.inductor is not None:
        return "own"
    return "host-kernels" if _C._host_addressable() else "none"


def device_compiler(device_name: str) -> Callable[..., Any]:
    """The Dynamo backend named after the device: ``torch.compile(model, backend="fake")``.

    Inductor with the device's best code generator, as ``backend="inductor"``; where the device
    has none, Inductor's graphs run every op on the backend's eager kernels
    (``fallback_by_default``) instead of failing. ``mode`` and ``options`` mean what they mean
    for Inductor.
    """

    def compile_for_device(
        gm: Any, example_inputs: Any, mode: str | None = None, options: dict[str, Any] | None = None
    ) -> Any:
        from torch._inductor import list_mode_options
        from torch._inductor.compile_fx import compile_fx

        patches = dict(list_mode_options(mode)) if mode else {}
        patches.update(options or {})
        if codegen_kind() == "none":
            patches.setdefault("fallback_by_default", True)
        return compile_fx(gm, example_inputs, config_patches=patches)

    compile_for_device.__name__ = compile_for_device.__qualname__ = device_name
    return compile_for_device


def codegen_identity(identity: str) -> Any:
    """A post-grad pass that changes nothing and names the code generator in Inductor's cache key."""
    from torch._inductor.custom_graph_pass import CustomGraphModulePass

    class CodegenIdentity(CustomGraphModulePass):
        def __call__(self, gm: Any) -> None:
            pass

        def uuid(self) -> str:
            return identity

    return CodegenIdentity()


def no_codegen(device_name: str) -> InductorCodegen:
    """For a device Inductor cannot generate kernels for.

    Graphs whose every op Inductor leaves to ATen (``options={"fallback_by_default":
    True}``) run on the backend's eager kernels; a graph that needs a generated
    kernel fails with a clear error naming the ways that work.
    """
    import sympy
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen
    from torch._inductor.scheduler import BaseScheduling

    message = (
        f"torch-backend: Inductor cannot generate kernels for '{device_name}': its memory is not "
        "host-addressable and the backend supplies no code generator (Backend.inductor). "
        f"torch.compile(model, backend='{device_name}') or torch.compile(model, "
        "options={'fallback_by_default': True}) runs Inductor's graphs on the backend's eager "
        "kernels; torch.compile(model, backend='aot_eager') traces the same graphs and runs them "
        "eagerly."
    )

    class NoKernelScheduling(BaseScheduling):
        def group_fn(self, sizes: Any) -> Any:
            return tuple(sympy.Mul(*size) for size in sizes)

        def can_fuse_vertical(self, node1: Any, node2: Any) -> bool:
            return False

        def can_fuse_horizontal(self, node1: Any, node2: Any) -> bool:
            return False

        def codegen_node(self, node: Any) -> None:
            raise NotImplementedError(message)

        def codegen_template(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError(message)

        def codegen_sync(self) -> None:
            pass

        def flush(self) -> None:
            pass

    return InductorCodegen(
        NoKernelScheduling,
        PythonWrapperCodegen,
        PythonWrapperCodegen,
        device_op_overrides=device_op_overrides(device_name),
    )


def device_op_overrides(device_name: str) -> Any:
    """How generated wrapper code names the device's calls: guard, streams, synchronize."""
    from torch._inductor.codegen.common import DeviceOpOverrides

    module = f"torch.{device_name}"

    class BackendDeviceOps(DeviceOpOverrides):
        def import_get_raw_stream_as(self, name: str) -> str:
            return f"from torch_backend._inductor import raw_stream as {name}"

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
    """The current stream's id on ``device_index`` (what generated code calls get_raw_stream)."""
    import torch

    return torch.accelerator.current_stream(device_index).stream_id
