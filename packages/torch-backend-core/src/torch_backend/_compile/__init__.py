"""torch.compile on the active backend, one module per part, importing one way (a test walks the graph):

- ``dynamo``: Dynamo's device interface and the traceable ``torch.<device>`` functions (registered when
  ``torch._dynamo`` is first imported), and the compile backend named after the device;
- ``inductor``: chooses the device's code generator and registers it (when Inductor's compiler is first
  imported);
- ``triton_codegen`` / ``host_codegen``: Triton kernels on the device's streams / Inductor's C++ kernels on
  host-addressable device memory; ``triton_interpreter`` supplies what Triton's CPU interpreter lacks;
- ``codegen``: what every code generator shares (the registration's parts, the device's calls in wrapper
  code, the cache-key pass);
- ``replay``: ``mode="reduce-overhead"``, compiled code replayed through ``torch.<device>.Graph``.

Nothing here is imported at ``import torch``: Dynamo and Inductor cost seconds to import.
"""
