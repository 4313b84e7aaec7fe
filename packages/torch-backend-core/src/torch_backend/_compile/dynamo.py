"""torch.compile's Dynamo on the active backend: its device interface, and
``torch.<device>`` functions it can trace.

Dynamo knows PyTorch's own device modules by name; for a PrivateUse1 device
it needs a registered interface (streams, events, synchronize, device count
and properties, memory). Calls to ``torch.<device>`` functions inside a
compiled function are traced through PyTorch's public hooks: polyfills in
terms of ``torch.accelerator`` (which Dynamo puts in the graph, with guards
where the answer can change), constant folding for properties fixed for the
process, and the interface's ``stream`` context manager. Registered when
Dynamo is first imported (see ``_when_imported``), never at ``import torch``.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

from torch_backend._backend import Backend


def register(module: ModuleType, backend: Backend) -> None:
    """Register ``module`` (``torch.<device>``) with Dynamo, and a compile backend named after
    the device (``torch.compile(model, backend="fake")``, in ``torch._dynamo.list_backends()``)."""
    from torch._dynamo import register_backend
    from torch._dynamo.device_interface import register_interface_for_device

    from torch_backend._compile.inductor import device_compiler

    register_interface_for_device(backend.name, make_interface(module, backend))
    _register_traceable_functions(module, backend.name)
    register_backend(compiler_fn=device_compiler(backend), name=backend.name)


def make_interface(module: ModuleType, backend: Backend) -> type:
    """Dynamo's DeviceInterface over the generated device module.

    Its Triton facts (``is_triton_capable``, the compute capability as the
    Triton target's architecture) hold where Inductor generates Triton kernels
    for the device.
    """
    from torch._dynamo.device_interface import DeviceInterface

    from torch_backend._compile.codegen import raw_stream
    from torch_backend._compile.inductor import codegen_kind

    class BackendInterface(DeviceInterface):
        device = module.device
        Event = module.Event
        Stream = module.Stream

        class Worker:
            # Inductor's compile workers ask these without touching the device.
            set_device = staticmethod(module.set_device)
            current_device = staticmethod(module.current_device)
            get_device_properties = staticmethod(module.get_device_properties)

        current_device = staticmethod(module.current_device)
        set_device = staticmethod(module.set_device)
        device_count = staticmethod(module.device_count)
        is_available = staticmethod(module.is_available)
        stream = staticmethod(module.stream)
        current_stream = staticmethod(module.current_stream)
        set_stream = staticmethod(module.set_stream)
        synchronize = staticmethod(module.synchronize)
        get_device_properties = staticmethod(module.get_device_properties)
        memory_allocated = staticmethod(module.memory_allocated)

        @staticmethod
        def maybe_exchange_device(device: int) -> int:
            return BackendInterface.exchange_device(device)

        @staticmethod
        def exchange_device(device: int) -> int:
            previous = module.current_device()
            if device >= 0 and device != previous:
                module.set_device(device)
            return previous

        get_raw_stream = staticmethod(raw_stream)

        @staticmethod
        def get_compute_capability(device: Any = None) -> int | str:
            # The Triton target's architecture where Inductor generates Triton
            # kernels; else CUDA's convention (major * 10 + minor) where the
            # runtime has numbers, its own words otherwise.
            props = module.get_device_properties(device)
            if backend.triton is not None and BackendInterface.is_triton_capable():
                from torch_backend._compile.triton_codegen import arch

                return arch(backend.triton, props)
            return props.major * 10 + props.minor if props.major >= 0 else props.capability

        @staticmethod
        def is_bf16_supported(including_emulation: bool = False) -> bool:
            return torch.bfloat16 in module.get_amp_supported_dtype()

        @staticmethod
        def is_triton_capable(device: Any = None) -> bool:
            return codegen_kind(backend) == "triton"

    BackendInterface.__name__ = BackendInterface.__qualname__ = f"{module.__name__.split('.')[-1].title()}Interface"
    return BackendInterface


def _register_traceable_functions(module: ModuleType, device_name: str) -> None:
    from torch.compiler import allow_in_graph, substitute_in_graph

    # Dynamo enters ``with torch.<device>.stream(s):`` through the interface's
    # ``stream`` once the call itself is left to it.
    allow_in_graph(module.stream)

    def traced_device(device: Any) -> torch.device | None:
        if device is None:
            return None
        if isinstance(device, int):
            return torch.device(device_name, device)
        return torch.device(device)

    # What can change while the program runs goes through torch.accelerator,
    # which Dynamo traces into the graph or guards on.
    @substitute_in_graph(module.current_device, skip_signature_check=True)
    def current_device() -> int:
        return torch.accelerator.current_device_index()

    @substitute_in_graph(module.current_stream, skip_signature_check=True)
    def current_stream(device: Any = None) -> torch.Stream:
        if device is None:
            return torch.accelerator.current_stream()
        return torch.accelerator.current_stream(traced_device(device))

    @substitute_in_graph(module.set_stream, skip_signature_check=True)
    def set_stream(stream: torch.Stream | None) -> None:
        if stream is not None:
            torch.accelerator.set_stream(stream)

    @substitute_in_graph(module.synchronize, skip_signature_check=True)
    def synchronize(device: Any = None) -> None:
        if device is None:
            torch.accelerator.synchronize()
        else:
            torch.accelerator.synchronize(traced_device(device))

    # The native calls the module's helpers make (device index checks,
    # refusing forked children): the same answers, traceable.
    from torch_backend import _C

    @substitute_in_graph(_C.current_device, skip_signature_check=True)
    def native_current_device() -> int:
        return torch.accelerator.current_device_index()

    for native in (_C._in_bad_fork, _C.device_count):
        substitute_in_graph(native, can_constant_fold_through=True, skip_signature_check=True)(_calling(native))

    # Fixed for the life of the process: evaluated while tracing.
    for fixed in (
        module.device_count,
        module.is_available,
        module.get_device_properties,
        module.get_device_name,
        module.get_device_capability,
        module.get_amp_supported_dtype,
    ):
        substitute_in_graph(fixed, can_constant_fold_through=True, skip_signature_check=True)(_calling(fixed))


def _calling(function: Any) -> Any:
    def traceable(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    return traceable
