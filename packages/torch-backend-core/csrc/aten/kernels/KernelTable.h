// Internal: the device kernels a backend registered (DeviceKernels.h), by
// family and name. Filled once at activation, read-only afterwards.
#pragma once

#include <string>

#include <torch_backend/DeviceKernels.h>

namespace torch_backend {

// Calls the device library's TORCH_BACKEND_DEFINE_DEVICE_KERNELS function, if
// it has one; throws c10::Error on an ABI mismatch.
void load_device_kernels(DeviceRuntime* runtime);

// nullptr when the backend has no such kernel.
BinaryKernel binary_kernel(const std::string& name);
UnaryKernel unary_kernel(const std::string& name);

}  // namespace torch_backend
