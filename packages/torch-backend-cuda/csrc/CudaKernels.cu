// The gpu backend's kernels (torch_backend/DeviceKernels.h): the portable
// kernels of kernels/ compiled for the GPU, matrix multiplies on cuBLAS
// (CudaGemm.cpp), convolutions on cuDNN (CudaConvolution.cpp), and the
// stream_sleep kernel the device symbols use. copy_into and sum_but_channels
// lend portable kernels to those files.
#include "CudaBackend.h"
#include "kernels/Registration.cuh"

namespace gpu {

Status copy_into(const KernelContext& ctx, const ElementwiseCall& call) {
  return copy_kernel(ctx, call);
}

Status sum_but_channels(const KernelContext& ctx, const TensorView& sums,
                        const TensorView& in) {
  // sums seen with in's shape, stride 0 along every dimension but 1: the
  // reduction folds those.
  TensorView out = in;
  out.data = sums.data;
  out.offset = sums.offset;
  out.dtype = sums.dtype;
  for (std::int32_t d = 0; d < out.dim; ++d) {
    out.strides[d] = d == 1 ? sums.strides[0] : 0;
  }
  return reduce<SumOp>(ctx, out, in);
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
