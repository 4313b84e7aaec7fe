"""The ``fake`` device: a fully working simulated accelerator in host memory.

Selected by torch-backend-core at ``import torch``; nothing to import by hand.
Environment: TORCH_BACKEND_FAKE_DEVICE_COUNT (default 2),
TORCH_BACKEND_FAKE_MEMORY_MB (per-device capacity, default 65536),
TORCH_BACKEND_FAKE_DISCRETE=1 (behave as a discrete device: memory that host
code may not address), TORCH_BACKEND_FAKE_INLINE_KERNELS=1 (device kernels run
on the calling thread when their stream is idle: the benchmarks' measure of
core's own host cost per op).

torch.compile: Inductor's C++ kernels in host memory; under Triton's
interpreter (TRITON_INTERPRET=1, tests) Inductor's Triton kernels, generated as
for an sm_80 NVIDIA GPU, in host and discrete memory alike.
"""

from pathlib import Path

from torch_backend import Backend, TritonTarget

backend = Backend(
    name="fake",
    library=Path(__file__).resolve().parent / "lib" / "libtorch_backend_fake.so",
    priority=10,
    description="simulated device in host memory",
    # No GPU behind it: the kernels run in Triton's interpreter, and compile
    # for NVIDIA's sm_80 wherever Triton's ptxas is at hand.
    triton=TritonTarget(vendor="nvidia", arch=80, interpreter_only=True),
)
