// The gpu backend's kernels (torch_backend/DeviceKernels.h): the portable
// kernels of kernels/ compiled for the GPU, matrix multiplies on cuBLAS
// (CudaGemm.cpp), convolutions on cuDNN (CudaConvolution.cpp), and the
// stream_sleep kernel the device symbols use.
#include "CudaBackend.h"
#include "kernels/Registration.cuh"

namespace gpu {

Status copy_into(const KernelContext& ctx, const ElementwiseCall& call) {
  return copy_kernel(ctx, call);
}

namespace {
__device__ unsigned long long global_nanoseconds() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

// Occupies the stream for `nanoseconds` of wall time, mostly asleep.
__global__ void sleep_kernel(unsigned long long nanoseconds) {
  const unsigned long long start = global_nanoseconds();
  while (global_nanoseconds() - start < nanoseconds) {
    __nanosleep(100000);
  }
}
}  // namespace

int launch_stream_sleep(void* stream, unsigned long microseconds) {
  sleep_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<unsigned long long>(microseconds) * 1000ull);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace gpu

TORCH_BACKEND_DEFINE_DEVICE_KERNELS(kernels) {
  gpu::register_portable_kernels(kernels);
  kernels.gemm(&gpu::cublas_gemm);
  kernels.convolution(&gpu::cudnn_convolution,
                      &gpu::cudnn_convolution_backward);
}
