// What the gpu backend's files share: the kernels CudaKernels.cu defines for
// the others, the driver's virtual memory calls, and status codes beyond the
// CUDA runtime's own (cuBLAS, cuDNN and driver statuses are returned offset, so
// that core's error messages, DeviceRuntime::error_text, can tell them
// apart).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include <torch_backend/DeviceKernels.h>

namespace gpu {

// Core's opaque stream handle is the CUDA stream itself.
inline cudaStream_t stream_of(torch_backend::StreamHandle stream) {
  return static_cast<cudaStream_t>(stream);
}

constexpr int kCublasStatusBase = 0x10000;

inline bool is_cublas_status(int status) {
  return status > kCublasStatusBase && status < kCublasStatusBase + 0x1000;
}
// "CUBLAS_STATUS_...: description" of a status offset by kCublasStatusBase.
std::string cublas_status_text(int status);

// cuDNN statuses (cudnnStatus_t), offset likewise.
constexpr int kCudnnStatusBase = 0x30000;

inline bool is_cudnn_status(int status) {
  return status > kCudnnStatusBase && status < kCudnnStatusBase + 0x10000;
}
// cuDNN's own description of a status offset by kCudnnStatusBase.
std::string cudnn_status_text(int status);

// CUDA driver statuses (CUresult), offset likewise.
constexpr int kDriverStatusBase = 0x20000;

inline bool is_driver_status(int status) {
  return status > kDriverStatusBase && status < kDriverStatusBase + 0x1000;
}
// "CUDA_ERROR_...: description" of a status offset by kDriverStatusBase.
std::string driver_status_text(int status);

// Virtual memory on the CUDA driver (CudaVirtualMemory.cpp), as
// DeviceRuntime's vm_* calls: kNotSupported where the driver is missing.
torch_backend::Status vm_granularity(std::size_t* bytes);
torch_backend::Status vm_reserve(void** base, std::size_t bytes);
torch_backend::Status vm_release(void* base, std::size_t bytes);
torch_backend::Status vm_create(void** handle, std::size_t bytes);
torch_backend::Status vm_destroy(void* handle);
torch_backend::Status vm_map(void* address, std::size_t bytes, void* handle);
torch_backend::Status vm_unmap(void* address, std::size_t bytes);

// Devices CUDA_VISIBLE_DEVICES leaves of `physical` ones (visible == nullptr:
// unset), as CUDA reads the list; -1 where only CUDA can tell (GPU UUIDs).
int visible_device_count(const char* visible, unsigned physical);
// The devices this process may use, counted with NVML (which, unlike
// cudaGetDeviceCount, leaves a forked child able to use CUDA); -1 where NVML
// cannot tell (VisibleDevices.cpp).
int count_devices_without_cuda();

// Enqueues a kernel on `stream` that spins for about `microseconds`
// (DeviceRuntime::stream_sleep).
int launch_stream_sleep(void* stream, unsigned long microseconds);

// The element-wise copy kernel (out = input converted), for gemm's addend.
torch_backend::Status copy_into(const torch_backend::KernelContext& ctx,
                                const torch_backend::ElementwiseCall& call);

// sums[c] = the sum of `in` over every dimension but 1 (the channels), with
// the reduction kernel: a convolution's bias gradient, as PyTorch computes it
// beside cuDNN (whose BackwardBias has no bfloat16).
torch_backend::Status sum_but_channels(const torch_backend::KernelContext& ctx,
                                       const torch_backend::TensorView& sums,
                                       const torch_backend::TensorView& in);

// The matrix-multiply family on cuBLAS (CudaGemm.cpp).
torch_backend::Status cublas_gemm(const torch_backend::KernelContext& ctx,
                                  const torch_backend::GemmCall& call);

// The convolution family on cuDNN (CudaConvolution.cpp).
torch_backend::Status cudnn_convolution(
    const torch_backend::KernelContext& ctx,
    const torch_backend::ConvolutionCall& call);
torch_backend::Status cudnn_convolution_backward(
    const torch_backend::KernelContext& ctx,
    const torch_backend::ConvolutionBackwardCall& call);

}  // namespace gpu
