"""Inductor's C++ kernels for a device whose memory host code may dereference.

Generated exactly as for CPU, and run on the calling thread over device
memory: the wrapper lets the device's queued stream work finish before each
C++ kernel, so kernels the backend runs on its streams (matmuls, ops Inductor
leaves to ATen) and Inductor's own stay in program order.
"""

from __future__ import annotations

from typing import Any

from torch_backend._compile.codegen import InductorCodegen, device_op_overrides, python_wrapper_with


def host_kernel_codegen(device_name: str) -> InductorCodegen:
    """Inductor's C++ kernels on host-addressable device memory."""
    import torch
    from torch._inductor.codegen.cpp import CppScheduling
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
    from torch._inductor.virtualized import V

    module = f"torch.{device_name}"
    # Inductor's scheduler reorders and reindexes loops during fusion for
    # every device but CPU, assuming Triton's loop groups; CPU's C++ kernels
    # are exempt ("not validated for CPU codegen"), and these are those
    # kernels. The two options only act on non-CPU devices, in a process
    # where this device is PyTorch's accelerator.
    from torch._inductor import config

    for option in ("loop_ordering_after_fusion", "loop_reindexing_after_fusion"):
        if hasattr(config, option):  # both from torch 2.13
            setattr(config, option, False)

    class WaitBeforeHostKernels:
        """Lets the device's queued work finish before each host kernel.

        Inductor's C++ kernels run on the calling thread, while the backend's
        own kernels (matmuls and other ops Inductor leaves to ATen) run on
        its streams: a host kernel reading their output must wait for them.
        """

        def write_header(self) -> None:
            super().write_header()  # type: ignore[misc]
            self.imports.writeline("from torch_backend._C import _wait_for_host_access")  # type: ignore[attr-defined]

        def _generate_kernel_call_helper(self, kernel_name: str, call_args: Any, **kwargs: Any) -> None:
            device = kwargs.get("device") or V.graph.get_current_device_or_throw()
            if kwargs.get("triton", True) or device.type != device_name:
                super()._generate_kernel_call_helper(kernel_name, call_args, **kwargs)  # type: ignore[misc]
                return
            # A C++ kernel: called like CPU's, once the device is done with its inputs.
            self.__dict__["_calls_host_kernels"] = True
            index = device.index if device.index is not None else torch.accelerator.current_device_index()
            self.writeline(f"_wait_for_host_access({index})")  # type: ignore[attr-defined]
            self.writeline(self.wrap_kernel_call(kernel_name, call_args))  # type: ignore[attr-defined]

        def graph_capture_obstacle(self) -> str | None:
            if not self.__dict__.get("_calls_host_kernels"):
                return None
            return (
                f"Inductor's C++ kernels for '{device_name}' run on the host between the device's work, "
                f"which a capture cannot record; torch.compile(model, backend='{device_name}', "
                "mode='reduce-overhead') runs every op on the backend's kernels and captures them"
            )

        def codegen_cuda_stream_enter(self, stream_idx: int) -> Any:
            # Inductor (2.13+: graphs using several streams) names the user's
            # streams where it enters a device guard, which it does for GPU
            # device types only: name them here.
            from torch._inductor.stream_constants import DEFAULT_STREAM_IDX
            from torch._inductor.stream_utils import get_stream_name

            name = get_stream_name(stream_idx)
            named: set[str] = self.__dict__.setdefault("_named_streams", set())
            if name not in named:
                named.add(name)
                if stream_idx == DEFAULT_STREAM_IDX:
                    self.writeline(f"{name} = {module}.current_stream()")  # type: ignore[attr-defined]
                else:
                    user_object = V.graph.scheduler.stream_idx_to_user_obj_idx[stream_idx]
                    self.writeline(  # type: ignore[attr-defined]
                        "from torch._dynamo.graph_bytecode_inputs import get_external_object_by_index"
                    )
                    self.writeline(f"{name} = get_external_object_by_index({user_object})")  # type: ignore[attr-defined]
            return super().codegen_cuda_stream_enter(stream_idx)  # type: ignore[misc]

    class HostKernelScheduling(CppScheduling):
        """Inductor's C++ kernels, generated for this device as they are for CPU.

        Inductor's C++ code generation asks which backend is current by
        device type, and answers "cpp" for CPU only (other devices get
        ``config.cuda_backend``): generating kernels says "cpp" here too.
        """

        def codegen_node(self, node: Any) -> None:
            with config.patch(cuda_backend="cpp"):
                super().codegen_node(node)

        def codegen_template(self, *args: Any, **kwargs: Any) -> Any:
            with config.patch(cuda_backend="cpp"):
                return super().codegen_template(*args, **kwargs)

        def flush(self) -> None:
            with config.patch(cuda_backend="cpp"):
                super().flush()

    return InductorCodegen(
        scheduling=HostKernelScheduling,
        python_wrapper=python_wrapper_with(WaitBeforeHostKernels, "HostKernelWrapper"),
        cpp_wrapper=CppWrapperCpu,
        device_op_overrides=device_op_overrides(device_name),
    )
