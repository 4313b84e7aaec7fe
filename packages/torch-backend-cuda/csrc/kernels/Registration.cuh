// Every kernel written in this folder, registered by the op table's names:
// the GPU build (CudaKernels.cu) adds cuBLAS's gemm; the host emulation
// (HostEmulation.cpp) registers these alone.
#pragma once

#include "Attention.cuh"
#include "Elementwise.cuh"
#include "Indexing.cuh"
#include "Loss.cuh"
#include "MultiTensor.cuh"
#include "Norm.cuh"
#include "Pooling.cuh"
#include "Random.cuh"
#include "Reduction.cuh"
#include "Softmax.cuh"

namespace gpu {

inline void register_portable_kernels(torch_backend::KernelRegistry& kernels) {
  register_elementwise(kernels);
  register_multi_tensor(kernels);
  register_reductions(kernels);
  register_softmax(kernels);
  register_indexing(kernels);
  kernels.nll_loss(&nll_loss, &nll_loss_backward);
  kernels.layer_norm(&layer_norm, &layer_norm_backward);
  kernels.batch_norm(&batch_norm, &batch_norm_backward);
  kernels.dropout(&dropout);
  kernels.attention(&attention, &attention_backward);
  register_pooling(kernels);
}

}  // namespace gpu
