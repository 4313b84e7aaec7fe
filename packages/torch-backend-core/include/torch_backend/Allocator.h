// Device memory allocator over the active runtime.
#pragma once

#include <c10/core/Allocator.h>

#include <torch_backend/Export.h>

namespace torch_backend {

// The allocator registered for PrivateUse1. Allocates on the current device
// of the calling thread.
TORCH_BACKEND_API c10::Allocator* device_allocator();

}  // namespace torch_backend
