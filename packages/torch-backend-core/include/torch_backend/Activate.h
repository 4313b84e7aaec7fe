// Turning a device runtime into a PyTorch PrivateUse1 backend.
#pragma once

#include <torch_backend/DeviceRuntime.h>

namespace torch_backend {

// Makes `runtime` active and registers core's guard, allocator, hooks, minimal
// kernels and CPU fallback for PrivateUse1. The PrivateUse1 name must already
// be set (torch.utils.rename_privateuse1_backend). Once per process: a second
// call throws c10::Error instead of touching PyTorch's registries again.
TORCH_BACKEND_API void activate(DeviceRuntime* runtime);

}  // namespace torch_backend
