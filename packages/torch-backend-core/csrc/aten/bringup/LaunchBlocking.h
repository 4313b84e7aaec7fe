// Internal: TORCH_BACKEND_LAUNCH_BLOCKING=1, CUDA_LAUNCH_BLOCKING's role for
// every backend. Device kernels and copies enqueue work and return; an error
// in that work surfaces at the next synchronising call, often ops later. With
// the setting, each kernel wrapper and asynchronous copy waits for its stream
// before returning, so the error is raised by the op that caused it.
#pragma once

#include <c10/core/Device.h>

namespace torch_backend {

// Whether TORCH_BACKEND_LAUNCH_BLOCKING=1 (read once per process, like CUDA's).
bool launch_blocking();

// Waits for the current stream of `device`. A failure raises a RuntimeError
// naming `what` (the ATen op or the copy) and the runtime's text.
void wait_after_launch(const char* what, c10::Device device);

}  // namespace torch_backend
