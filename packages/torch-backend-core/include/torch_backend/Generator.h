// Per-device random number generators.
#pragma once

#include <ATen/core/Generator.h>

#include <torch_backend/Export.h>

namespace torch_backend {

// The default generator of `device` (-1: current device), created on first use
// with PyTorch's default seed.
TORCH_BACKEND_API const at::Generator& default_generator(
    c10::DeviceIndex device);
TORCH_BACKEND_API at::Generator new_generator(c10::DeviceIndex device);

}  // namespace torch_backend
