// Host access to device memory, for backends whose memory host code can
// dereference (DeviceRuntime::capabilities().host_addressable_memory): a
// native kernel may compute on CPU tensors that alias device tensors.
#pragma once

#include <ATen/core/Tensor.h>

#include <torch_backend/Export.h>
#include <torch_backend/Runtime.h>  // wait_for_host_access

namespace torch_backend {

// A CPU tensor over the same memory as the device tensor `t` (same sizes,
// strides, offset, conj/neg bits), keeping t's storage alive. Writes through
// it are writes to `t`.
TORCH_BACKEND_API at::Tensor host_alias(const at::Tensor& t);

// If `cpu` aliases a device storage (made by host_alias), the device tensor
// with the same view of it; otherwise an undefined tensor.
TORCH_BACKEND_API at::Tensor device_view_of_alias(const at::Tensor& cpu);

// A device tensor over `storage` with `cpu`'s sizes, strides, offset and
// conj/neg bits.
TORCH_BACKEND_API at::Tensor device_tensor_like(const c10::Storage& storage,
                                                const at::Tensor& cpu);

}  // namespace torch_backend
