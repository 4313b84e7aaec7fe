"""The ``fake`` device: a fully working simulated accelerator in host memory.

Selected by torch-backend-core at ``import torch``; nothing to import by hand.
Environment: TORCH_BACKEND_FAKE_DEVICE_COUNT (default 2),
TORCH_BACKEND_FAKE_MEMORY_MB (per-device capacity, default 65536),
TORCH_BACKEND_FAKE_DISCRETE=1 (behave as a discrete device: memory that host
code may not address), TORCH_BACKEND_FAKE_INLINE_KERNELS=1 (device kernels run
on the calling thread when their stream is idle: the benchmarks' measure of
core's own host cost per op).
"""

from pathlib import Path

from torch_backend import Backend

backend = Backend(
    name="fake",
    library=Path(__file__).resolve().parent / "lib" / "libtorch_backend_fake.so",
    priority=10,
    description="simulated device in host memory",
)
