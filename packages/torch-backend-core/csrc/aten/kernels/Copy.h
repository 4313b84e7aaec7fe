// Internal: device-to-device copies (strided, broadcast, casting) on the
// backend's "copy" kernel, for _copy_from and the ops built from copies.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_backend {

// dst = src (broadcast to dst, converted to dst's dtype), both on one device.
// False when the backend has no copy kernel or declined this pair of dtypes.
bool copy_on_device(const at::Tensor& dst, const at::Tensor& src);

// Whether the backend has a copy kernel at all (before staging anything).
bool has_copy_kernel();

}  // namespace torch_backend
