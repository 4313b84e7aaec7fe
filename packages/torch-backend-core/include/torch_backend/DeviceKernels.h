// The device-kernel interface: compute a backend runs on its own hardware.
//
// Like DeviceRuntime.h, this header is free of torch headers. A backend
// implements kernels over plain tensor descriptors; core does the generic
// work with ATen's own machinery (the structured-kernel meta functions and
// TensorIterator: type promotion, broadcasting, output allocation, out= and
// in-place variants, resizing, dimension coalescing, device checks) and
// registers an ATen kernel for every op whose kernel the backend provides.
// Every other op stays on core's CPU fallback.
//
// In the backend's kernel file (KERNEL_SOURCES in CMake):
//   TORCH_BACKEND_DEFINE_DEVICE_KERNELS(kernels) {
//     kernels.binary("add", &my_add);   // one function plus one line
//   }
// Core calls it once at activation. Kernel names are the families' op names
// listed in core's op table (`python -m torch_backend ops` shows them).
#pragma once

#include <cstdint>

#include <torch_backend/DeviceRuntime.h>

namespace torch_backend {

// Bumped whenever a descriptor layout or kernel signature changes.
constexpr int kDeviceKernelsAbiVersion = 2;

enum class DType : std::int8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};

constexpr int kMaxKernelDims = 25;  // TensorIterator's limit

// A strided view of device memory. Element (i0, i1, ...) lives at
// data + (offset + sum(i_k * strides[k])) * element_size(dtype).
struct TensorView {
  void* data = nullptr;     // device pointer (the allocation, or any base)
  std::int64_t offset = 0;  // in elements
  DType dtype = DType::Float32;
  std::int32_t dim = 0;  // 0: a single element
  std::int64_t sizes[kMaxKernelDims] = {};
  std::int64_t strides[kMaxKernelDims] = {};  // in elements; 0 broadcasts

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (std::int32_t d = 0; d < dim; ++d) {
      n *= sizes[d];
    }
    return n;
  }
};

// A host-side scalar argument (alpha of add/sub), in the op's compute type.
struct ScalarValue {
  double as_double = 0;
  std::int64_t as_int = 0;
  bool is_integral = false;
};

// Where a kernel runs: the current device and stream core hands it. A kernel
// enqueues its work on `stream` and returns; core orders everything else.
struct KernelContext {
  StreamHandle stream = nullptr;
  int device = 0;
};

// Element-wise binary family: out = a (op) b, all three with the same sizes
// (broadcast operands have stride 0), already coalesced, and the same dtype
// (core casts operands of another dtype first). alpha: add/sub's multiplier
// of b (1 otherwise). Return kNotSupported to decline a dtype: core then
// runs that call on the fallback.
using BinaryKernel = Status (*)(const KernelContext& ctx, const TensorView& out,
                                const TensorView& a, const TensorView& b,
                                const ScalarValue& alpha);

// Element-wise unary family: out = op(in), same sizes and dtype (core casts
// first: float ops such as exp on integers compute in the float result type).
using UnaryKernel = Status (*)(const KernelContext& ctx, const TensorView& out,
                               const TensorView& in);

// Filled by the backend's TORCH_BACKEND_DEFINE_DEVICE_KERNELS function.
class TORCH_BACKEND_API KernelRegistry {
 public:
  virtual ~KernelRegistry();
  // Binary element-wise kernels: "add", "sub", "mul", "div".
  virtual void binary(const char* name, BinaryKernel kernel) = 0;
  // Unary element-wise kernels: "exp", "log", "sqrt", "rsqrt", "sin", "cos",
  // "tanh", "sigmoid", "neg", "reciprocal", "erf", "silu".
  virtual void unary(const char* name, UnaryKernel kernel) = 0;
};

}  // namespace torch_backend

#define TORCH_BACKEND_DEVICE_KERNELS_SYMBOL "torch_backend_device_kernels"

#define TORCH_BACKEND_DEFINE_DEVICE_KERNELS(registry)                      \
  extern "C" TORCH_BACKEND_EXPORT int torch_backend_device_kernels_abi() { \
    return ::torch_backend::kDeviceKernelsAbiVersion;                      \
  }                                                                        \
  extern "C" TORCH_BACKEND_EXPORT void torch_backend_device_kernels(       \
      ::torch_backend::KernelRegistry& registry)
