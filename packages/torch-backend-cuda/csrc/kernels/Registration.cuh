// Every kernel written in this folder, registered by the op table's names:
// the GPU build (CudaKernels.cu) adds cuBLAS's gemm; the host emulation
// (HostEmulation.cpp) registers these alone.
#pragma once

#include "Elementwise.cuh"
#include "Reduction.cuh"
#include "Softmax.cuh"

namespace gpu {

inline void register_portable_kernels(torch_backend::KernelRegistry& kernels) {
  register_elementwise(kernels);
  register_reductions(kernels);
  register_softmax(kernels);
}

}  // namespace gpu
