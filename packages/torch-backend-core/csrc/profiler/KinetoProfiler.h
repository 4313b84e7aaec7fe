// Internal: PyTorch's profiler sees the device's activity (its kernels and
// copies, timed on the device) through a Kineto child profiler registered
// for PrivateUse1 (PyTorch 2.13+; older releases profile host time only).
#pragma once

namespace torch_backend {

// Registers the profiler once; safe to call at every activation.
void register_device_profiler();

}  // namespace torch_backend
