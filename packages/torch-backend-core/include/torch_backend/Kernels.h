// Native kernels of a backend, overriding the CPU fallback for their ops.
//
// In one file of the device library (listed as KERNEL_SOURCES in CMake):
//   TORCH_BACKEND_DEFINE_KERNELS(m) {
//     m.impl("fill_.Scalar", TORCH_FN(my_fill));
//   }
// `m` is a torch::Library for namespace aten and the PrivateUse1 key. Core
// calls this once, at activation, before it routes every remaining op to the
// fallback; nothing is registered when the library is merely loaded.
#pragma once

#include <torch/library.h>

#include <torch_backend/DeviceRuntime.h>

#define TORCH_BACKEND_DEFINE_KERNELS(lib)                              \
  extern "C" TORCH_BACKEND_EXPORT void torch_backend_register_kernels( \
      torch::Library& lib)
