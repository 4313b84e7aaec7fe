"""Inductor's Triton kernels for a backend that declares a Triton target (``Backend.triton``).

Registered when Inductor's compiler is first imported, never at ``import torch``:

- Triton learns a backend named after the device (``triton.backends.backends``):
  the vendor's compiler, answering only for the device's targets
  (``GPUTarget("<device>", arch, warp_size)``, so Triton's and Inductor's caches
  key kernels by device), and a driver whose launches go to the device's
  current stream. It is listed after the vendor backends: where the vendor's
  own device is usable too (PyTorch's CUDA beside a backend), Inductor's
  kernels for it keep the vendor's driver.
- Inductor gets its Triton scheduling and Python wrapper for the device; the
  wrapper passes the device's current stream (its native handle) to each launch.

Under Triton's interpreter (``TRITON_INTERPRET=1``, tests) the kernels run on
the host over copies of their arguments, and core supplies the ``libdevice``
functions the interpreter lacks (:mod:`torch_backend._compile.triton_interpreter`).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from typing import Any

from torch_backend._backend import TritonTarget
from torch_backend._compile.codegen import InductorCodegen, device_op_overrides, python_wrapper_with

#: The target name each vendor's compiler expects (Triton's ``GPUTarget.backend``).
_VENDOR_TARGET_NAMES = {"nvidia": "cuda", "amd": "hip"}


def interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter (read by Triton when it is first imported)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


@functools.cache
def compiler_missing(target: TritonTarget) -> str | None:
    """Why this process has no Triton compiler for the target (None: it has).

    Imports ``triton.backends`` where triton is installed: asked when Inductor
    first compiles, never at ``import torch``.
    """
    if importlib.util.find_spec("triton") is None:
        return "triton is not installed"
    import triton.backends

    if target.vendor not in triton.backends.backends:
        installed = ", ".join(sorted(triton.backends.backends)) or "none"
        return f"the installed triton has no '{target.vendor}' backend (it has: {installed})"
    return None


def unusable_reason(target: TritonTarget) -> str | None:
    """Why Inductor cannot run the device's Triton kernels in this process, or None if it can
    (fixed for the process: Triton reads ``TRITON_INTERPRET`` once, when first imported)."""
    if target.interpreter_only and not interpreting():
        return "its Triton kernels run only under Triton's interpreter (TRITON_INTERPRET=1)"
    return compiler_missing(target)


def arch(target: TritonTarget, properties: Any) -> int | str:
    """The architecture the vendor's compiler targets for a device with ``properties``."""
    if target.arch is None:
        return int(properties.major) * 10 + int(properties.minor)
    return target.arch(properties) if callable(target.arch) else target.arch


def warp_size(target: TritonTarget, properties: Any) -> int:
    return getattr(properties, "warp_size", 0) or target.warp_size


def triton_codegen(device_name: str) -> InductorCodegen:
    """Inductor's Triton code generators for the device (its Triton backend registered first)."""
    from torch._inductor.codegen.triton import TritonScheduling
    from torch._inductor.codegen.wrapper import (
        EnterDeviceContextManagerLine,
        ExitDeviceContextManagerLine,
        PythonWrapperCodegen,
    )
    from torch._inductor.utils import device_need_guard
    from torch._inductor.virtualized import V

    from torch_backend._compat import inductor_last_pass_takes_wrapper_lines

    if interpreting():
        from torch_backend._compile.triton_interpreter import provide_libdevice

        provide_libdevice()

    class LaunchInDeviceGuard:
        """Each Triton launch inside the device's guard, where Inductor writes none.

        Inductor guards launches for its GPU types only (``GPU_TYPES``), which
        hold no PrivateUse1 device on torch 2.11-2.15 (2.15 adds the Triton
        capable devices registered before Inductor loads; ours registers with
        Dynamo). A launcher starts a kernel in the current device's context.
        """

        def _generate_kernel_call_helper(self, kernel_name: str, call_args: Any, **kwargs: Any) -> None:
            device = kwargs.get("device") or V.graph.get_current_device_or_throw()
            guard = kwargs.get("triton", True) and device.type == device_name and not device_need_guard(device.type)
            if guard:
                self._write_guard_line(EnterDeviceContextManagerLine(device.index, None))
            super()._generate_kernel_call_helper(kernel_name, call_args, **kwargs)  # type: ignore[misc]
            if guard:
                self._write_guard_line(ExitDeviceContextManagerLine())

        def graph_capture_obstacle(self) -> str | None:
            if not interpreting():
                return None
            return (
                "Triton's interpreter runs its kernels on the host, which a capture cannot record; "
                f"torch.compile(model, backend='{device_name}', mode='reduce-overhead') runs every op "
                "on the backend's kernels and captures them"
            )

        def _write_guard_line(self, line: Any) -> None:
            # Kernel calls are written in Inductor's last pass, where writeline
            # is redirected to the wrapper's text (set_writeline): torch 2.11's
            # takes text only, so the guard's line renders itself there.
            if "writeline" in vars(self) and not inductor_last_pass_takes_wrapper_lines():
                line.codegen(self.wrapper_call)  # type: ignore[attr-defined]
            else:
                self.writeline(line)  # type: ignore[attr-defined]

    class NoCppWrapper(PythonWrapperCodegen):
        """Inductor's C++ wrapper loads Triton kernels through CUDA's or XPU's driver API by
        device name: not offered for the device, and asking for it says so."""

        @staticmethod
        def create(*args: Any, **kwargs: Any) -> PythonWrapperCodegen:
            raise NotImplementedError(
                f"torch-backend: Inductor's C++ wrapper (cpp_wrapper=True) is not available for "
                f"Triton kernels on '{device_name}'; compile without it (the default Python wrapper)"
            )

    return InductorCodegen(
        scheduling=TritonScheduling,
        python_wrapper=python_wrapper_with(LaunchInDeviceGuard, "TritonWrapper"),
        cpp_wrapper=NoCppWrapper,
        device_op_overrides=device_op_overrides(device_name),
    )


def register_triton_backend(device_name: str, target: TritonTarget) -> None:
    """Add the device to ``triton.backends.backends``: the vendor's compiler, a driver of the device's.

    Wherever the compiler is installed, even where the kernels cannot run
    here (``interpreter_only``): compiling for the target needs no device.
    """
    import triton.backends
    import triton.runtime

    if device_name in triton.backends.backends:
        return
    vendor = triton.backends.backends[target.vendor]
    compiler = _device_compiler(device_name, vendor.compiler, _VENDOR_TARGET_NAMES.get(target.vendor, target.vendor))
    driver = _device_driver(device_name, target, vendor.driver)
    # Appended after the vendors' backends.
    triton.backends.backends[device_name] = triton.backends.Backend(compiler=compiler, driver=driver)
    # Made the active driver now: where the vendor's device is usable too (a GPU
    # beside the gpu backend) both drivers are active, and Triton's default
    # driver (the one active driver) would refuse to choose. The device is
    # PyTorch's accelerator in this process; Inductor's set_driver_to_gpu()
    # keeps an active driver that is an instance of the vendor's.
    triton.runtime.driver.set_active(driver())


def _device_compiler(device_name: str, vendor_compiler: type, vendor_target_name: str) -> type:
    from triton.backends.compiler import GPUTarget

    class DeviceCompiler(vendor_compiler):  # type: ignore[misc, valid-type]
        """The vendor's compiler for the device's targets only (Triton picks compilers by target)."""

        @staticmethod
        def supports_target(target: Any) -> bool:
            return target.backend == device_name

        def __init__(self, target: Any) -> None:
            # The vendor's compiler checks and reads its target under its own
            # name (NVIDIA's "cuda"): same architecture, same warp size.
            self.supports_target = vendor_compiler.supports_target  # type: ignore[method-assign]
            try:
                super().__init__(GPUTarget(vendor_target_name, target.arch, target.warp_size))
            finally:
                del self.supports_target
            self.device_target = target

        def hash(self) -> str:
            # Part of Triton's cache key. The vendor's alone would give a kernel compiled for
            # the device and the same kernel for the vendor's own device (CUDA's, beside gpu)
            # one entry, and a process compiling for one would load the other's (whose target
            # it has no compiler for: "0 compatible backends for target (gpu)" on an H200).
            return f"{device_name}-{super().hash()}"

    DeviceCompiler.__name__ = DeviceCompiler.__qualname__ = f"{device_name.title()}{vendor_compiler.__name__}"
    return DeviceCompiler


def _device_driver(device_name: str, target: TritonTarget, vendor_driver: type) -> type:
    import torch
    from triton.backends.compiler import GPUTarget

    from torch_backend._compile.codegen import raw_stream

    def properties(index: int) -> Any:
        return getattr(torch, device_name).get_device_properties(index)

    class DeviceDriver(vendor_driver):  # type: ignore[misc, valid-type]
        """The vendor's driver, answering for the device: its target, current device and stream.

        Loading binaries and launching (``utils``, ``launcher_cls``) are the
        vendor's, made on first use: they need the vendor's runtime (libcuda),
        which neither the interpreter nor a compile-only process has.
        """

        def __init__(self) -> None:
            self.get_current_device = torch.accelerator.current_device_index
            self.set_current_device = torch.accelerator.set_device_index
            self.get_current_stream = raw_stream

        def __getattr__(self, name: str) -> Any:
            if name.startswith("__") or name == "_vendor":
                raise AttributeError(name)
            vendor = self.__dict__.get("_vendor")
            if vendor is None:
                vendor = self.__dict__["_vendor"] = vendor_driver()
            return getattr(vendor, name)

        @classmethod
        def is_active(cls) -> bool:
            return True  # registered only while the device is PyTorch's PrivateUse1 device

        def get_device_capability(self, index: int | None = None) -> tuple[int, int]:
            props = properties(self.get_current_device() if index is None else index)
            return props.major, props.minor

        def get_current_target(self) -> Any:
            props = properties(self.get_current_device())
            return GPUTarget(device_name, arch(target, props), warp_size(target, props))

        def get_active_torch_device(self) -> torch.device:
            return torch.device(device_name, self.get_current_device())

        def get_device_interface(self) -> Any:
            return getattr(torch, device_name)

        def get_empty_cache_for_benchmark(self) -> torch.Tensor:
            # What the vendor's does (256 MB that benchmarks clear between runs), on the device.
            return torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device=self.get_active_torch_device())

        def clear_cache(self, cache: torch.Tensor) -> None:
            cache.zero_()

    DeviceDriver.__name__ = DeviceDriver.__qualname__ = f"{device_name.title()}{vendor_driver.__name__}"
    return DeviceDriver
