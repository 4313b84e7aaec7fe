"""torch.compile's Inductor on the active backend.

Registered with Inductor (``register_backend_for_device``) when Inductor's
compiler is first imported, never at ``import torch``. The device gets the
first of these it has:

- its own code generator (``Backend.inductor``);
- Triton kernels, where it declares a Triton target (``Backend.triton``) that
  this process can use (``triton_codegen``);
- Inductor's C++ kernels where host code may dereference its memory, computing
  on device memory once the stream's queued work is done (``host_codegen``);
- no kernels of Inductor's: graphs whose every op Inductor leaves to ATen
  (``options={"fallback_by_default": True}``, or ``backend="<device>"``) run
  on the backend's eager kernels, and a graph that needs a generated kernel
  fails with a clear error naming those and ``backend="aot_eager"``.

Which of these applies, and the kind of memory, are part of Inductor's cache
key (``CodegenIdentity``), so compiled code cached for one is never reused for
another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch_backend._backend import Backend
from torch_backend._compile.codegen import InductorCodegen, codegen_identity, device_op_overrides, python_wrapper_with


def register(backend: Backend) -> None:
    """Register ``backend``'s Inductor code generators for its device."""
    from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides
    from torch._inductor.codegen.wrapper_fxir import WrapperFxCodegen

    from torch_backend import _C

    device_name = backend.name
    if backend.triton is not None:
        from torch_backend._compile.triton_codegen import compiler_missing, register_triton_backend

        if compiler_missing(backend.triton) is None:
            register_triton_backend(device_name, backend.triton)
    kind = codegen_kind(backend)
    memory = "host-addressable" if _C._host_addressable() else "discrete"
    if kind == "own":
        codegen, identity = backend.inductor(), f"{backend.name}-own"  # type: ignore[misc]
    elif kind == "triton":
        from torch_backend._compile.triton_codegen import interpreting, triton_codegen

        assert backend.triton is not None
        codegen = triton_codegen(device_name)
        identity = f"triton-{backend.triton.vendor}" + ("-interpreted" if interpreting() else "")
    elif kind == "host-kernels":
        from torch_backend._compile.host_codegen import host_kernel_codegen

        codegen, identity = host_kernel_codegen(device_name), "host-kernels"
    else:
        codegen, identity = no_codegen(backend), "none"
    if codegen.device_op_overrides is not None:
        register_device_op_overrides(device_name, codegen.device_op_overrides)
    register_backend_for_device(
        device_name,
        codegen.scheduling,
        codegen.python_wrapper,
        codegen.cpp_wrapper,
        # FX wrapper code is device-neutral.
        codegen.fx_wrapper or WrapperFxCodegen,
        device_custom_pass=codegen_identity(f"torch-backend:{device_name}:{identity}:{memory}:{codegen_revision()}"),
    )


def codegen_revision() -> str:
    """A digest of core's Inductor modules: code they generated is not reused once they change
    (Inductor's cache key covers torch's own sources, not these)."""
    import hashlib
    from pathlib import Path

    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def codegen_kind(backend: Backend) -> str:
    """``backend``'s code generator: ``own`` (``Backend.inductor``), ``triton`` (``Backend.triton``,
    usable here), ``host-kernels`` (Inductor's C++ kernels, memory the host may address) or ``none``."""
    from torch_backend import _C

    if backend.inductor is not None:
        return "own"
    if triton_unusable_reason(backend) is None:
        return "triton"
    return "host-kernels" if _C._host_addressable() else "none"


def triton_unusable_reason(backend: Backend) -> str | None:
    """Why ``backend`` gets no Triton kernels here (None: it does)."""
    if backend.triton is None:
        return "it declares no Triton target (Backend.triton)"
    from torch_backend._compile.triton_codegen import unusable_reason

    return unusable_reason(backend.triton)


def kernels_capturable(backend: Backend, kind: str) -> bool:
    """Whether a device graph can record the kernels ``kind``'s code generator writes: not
    Inductor's C++ kernels (they run on the host) nor Triton's interpreter."""
    if kind == "host-kernels":
        return False
    if kind == "triton":
        from torch_backend._compile.triton_codegen import interpreting

        return not interpreting()
    return True


def draws_integers_on_device() -> bool:
    """Whether the active backend has a device kernel for ``random_.from`` (``aten.randint``)."""
    from torch_backend import _C

    return any(op == "random_.from" and on_device for op, _family, _kernel, on_device, _forced in _C._op_table())


def device_compiler(backend: Backend) -> Callable[..., Any]:
    """The Dynamo backend named after the device: ``torch.compile(model, backend="fake")``.

    Inductor with the device's best code generator, as ``backend="inductor"``; where the device
    has none, Inductor's graphs run every op on the backend's eager kernels
    (``fallback_by_default``) instead of failing. ``mode`` and ``options`` mean what they mean
    for Inductor; with ``mode="reduce-overhead"`` the graphs replay through device graphs, on
    the backend's eager kernels where a capture cannot record Inductor's (``kernels_capturable``).
    """

    def compile_for_device(
        gm: Any, example_inputs: Any, mode: str | None = None, options: dict[str, Any] | None = None
    ) -> Any:
        from torch._inductor import list_mode_options
        from torch._inductor.compile_fx import compile_fx

        patches = dict(list_mode_options(mode)) if mode else {}
        patches.update(options or {})
        kind = codegen_kind(backend)
        if kind == "none" or (patches.get("triton.cudagraphs") and not kernels_capturable(backend, kind)):
            # Every op on the backend's own kernels: where Inductor has none for the device, and
            # for device graphs (reduce-overhead) where a capture cannot record Inductor's.
            # Random ops too (the backend's draw what eager draws, and are graph-safe).
            patches.setdefault("fallback_by_default", True)
            patches.setdefault("fallback_random", True)
        elif patches.get("triton.cudagraphs") and not draws_integers_on_device():
            # Inductor seeds its random kernels with aten.randint on the device; without a device
            # kernel for it that runs on the CPU fallback, which a capture cannot record. Random
            # ops then run on the backend's own kernels (dropout's is graph-safe), as eager.
            patches.setdefault("fallback_random", True)
        return compile_fx(gm, example_inputs, config_patches=patches)

    compile_for_device.__name__ = compile_for_device.__qualname__ = backend.name
    return compile_for_device


def no_codegen(backend: Backend) -> InductorCodegen:
    """For a device Inductor cannot generate kernels for.

    Graphs whose every op Inductor leaves to ATen (``options={"fallback_by_default":
    True}``) run on the backend's eager kernels; a graph that needs a generated
    kernel fails with a clear error naming the ways that work.
    """
    import sympy
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen
    from torch._inductor.scheduler import BaseScheduling

    device_name = backend.name
    message = (
        f"torch-backend: Inductor cannot generate kernels for '{device_name}': its memory is not "
        "host-addressable, the backend supplies no code generator (Backend.inductor), and no "
        f"Triton kernels: {triton_unusable_reason(backend)}. "
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
        python_wrapper_with(None, "NoKernelWrapper"),
        PythonWrapperCodegen,
        device_op_overrides=device_op_overrides(device_name),
    )
