"""Device tensors through torch.multiprocessing (queues, pipes, spawn arguments).

PyTorch pickles tensors for other processes with reducers it registers in
``multiprocessing.reduction.ForkingPickler``; for a device other than CUDA they
fail in the producer (``_share_fd_: only available on CPU``), and a queue's
consumer then waits forever, since a queue pickles in a background thread. Core
registers a reducer for ``torch.Tensor`` and ``Parameter`` that sends the
backend's tensors as inter-process memory handles (``DeviceRuntime::ipc_*``:
the consumer maps the producer's memory, no copy) and hands every other tensor
to PyTorch's own reducer. A backend whose runtime has no handles gets a clear
error in the consumer (and a warning in the producer), never a hang. As with
CUDA, the producer keeps the tensor alive while consumers use it.
"""

from __future__ import annotations

import warnings
from multiprocessing.reduction import ForkingPickler
from typing import Any

import torch
from torch.multiprocessing import reductions

from torch_backend import _C


def register(device_type: str) -> None:
    def reduce(tensor: torch.Tensor) -> tuple[Any, tuple[Any, ...]]:
        if tensor.device.type != device_type:
            return reductions.reduce_tensor(tensor)
        return _reduce_device_tensor(tensor)

    for cls in (torch.Tensor, torch.nn.Parameter):
        ForkingPickler.register(cls, reduce)


def _reduce_device_tensor(tensor: torch.Tensor) -> tuple[Any, tuple[Any, ...]]:
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(  # PyTorch's own rule for every tensor
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, "
            "since autograd does not support crossing process boundaries.  "
            "If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue)."
        )
    try:
        shared = _C._share_storage(tensor.untyped_storage()._cdata)
    except RuntimeError as error:
        # A queue pickles in a background thread, where raising would only
        # print: the consumer gets the error instead of waiting for ever.
        warnings.warn(str(error), RuntimeWarning, stacklevel=2)
        return (_refuse, (str(error),))
    layout = (tensor.dtype, tuple(tensor.size()), tuple(tensor.stride()), tensor.storage_offset())
    return (_rebuild, (type(tensor), shared, layout, tensor.requires_grad))


def _rebuild(
    cls: type, shared: tuple[bytes, int, int, int], layout: tuple[Any, ...], requires_grad: bool
) -> torch.Tensor:
    handle, device, offset, nbytes = shared
    dtype, size, stride, storage_offset = layout
    where = torch.device(torch._C._get_privateuse1_backend_name(), device)
    tensor = torch.empty((0,), dtype=dtype, device=where)
    if nbytes > 0:
        memory = torch.from_dlpack(_C._open_shared(handle, device, offset, nbytes))
        tensor.set_(memory.untyped_storage(), storage_offset, size, stride)
    else:
        tensor = tensor.as_strided(size, stride, storage_offset)
    if cls is torch.nn.Parameter:
        return torch.nn.Parameter(tensor, requires_grad=requires_grad)
    return tensor.requires_grad_(requires_grad)


def _refuse(message: str) -> torch.Tensor:
    raise RuntimeError(message)
