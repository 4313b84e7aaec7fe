"""The ``torch.<device>`` module core generates for whichever backend is active.

Names and semantics follow ``torch.cuda`` where they make sense. One backend is
active per process, so the functions here read the device name from PyTorch.
"""

from __future__ import annotations

import types

from torch_backend._device_module import _devices, _graphs, _memory, _random, _snapshot, _streams

_SUBMODULES = (_devices, _graphs, _memory, _random, _streams)


def make_device_module(device_name: str) -> types.ModuleType:
    """Build the module registered as ``torch.<device_name>``."""
    module = types.ModuleType(f"torch.{device_name}", f"PyTorch device module for '{device_name}' (torch-backend).")
    for source in _SUBMODULES:
        for name in source.__all__:
            setattr(module, name, getattr(source, name))
    # torch.<device>.memory, as torch.cuda.memory: the allocator's functions
    # and its history and snapshots.
    memory = types.ModuleType(f"torch.{device_name}.memory", "Memory management (torch-backend).")
    for source in (_memory, _snapshot):
        for name in source.__all__:
            setattr(memory, name, getattr(source, name))
    module.memory = memory
    # torch.<device>.graphs, as torch.cuda.graphs.
    graphs = types.ModuleType(f"torch.{device_name}.graphs", "Graph capture and replay (torch-backend).")
    for name in _graphs.__all__:
        setattr(graphs, name, getattr(_graphs, name))
    module.graphs = graphs
    return module
