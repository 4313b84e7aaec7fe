// What every kernel of the gpu backend is written against: element types,
// index arithmetic over core's strided views, and the launch of one function
// per index on the stream core hands the kernel.
//
// Compiled by nvcc for the GPU (CudaKernels.cu) and, for tests, by the host
// compiler (HostEmulation.cpp): then a "launch" runs the same functions in a
// loop on the calling thread, so the kernels' index arithmetic, dtype
// handling and numerics are checked on a machine without a GPU. Only what is
// inside `#if defined(__CUDACC__)` (the launch itself, block reductions, the
// cuBLAS calls) needs a GPU to be checked.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <torch_backend/DeviceKernels.h>

#if defined(__CUDACC__)
#include <cuda_runtime_api.h>
#define GPU_HD __host__ __device__ __forceinline__
#else
#define GPU_HD inline
#endif

namespace gpu {

using torch_backend::DType;
using torch_backend::KernelContext;
using torch_backend::kMaxKernelDims;
using torch_backend::kNotSupported;
using torch_backend::kSuccess;
using torch_backend::ScalarValue;
using torch_backend::Status;
using torch_backend::TensorView;

// ---- element types ------------------------------------------------------

template <typename T>
constexpr bool is_reduced_float =
    std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// Half and bfloat16 compute in float, as PyTorch's kernels do.
template <typename T>
using Compute = std::conditional_t<is_reduced_float<T>, float, T>;

template <typename T>
GPU_HD Compute<T> load(T value) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(value);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(value);
  } else {
    return value;
  }
}

// value converted to T (through float for half and bfloat16).
template <typename T, typename V>
GPU_HD T store(V value) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half(static_cast<float>(value));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16(static_cast<float>(value));
  } else if constexpr (std::is_same_v<T, bool>) {
    return value != V(0);
  } else {
    return static_cast<T>(value);
  }
}

template <typename T>
constexpr bool is_floating =
    std::is_floating_point_v<Compute<T>> || is_reduced_float<T>;

// Calls Job<T>::run(args...) for the C++ type of `dtype`.
template <template <typename> class Job, typename... Args>
Status dispatch(DType dtype, Args&&... args) {
  switch (dtype) {
    case DType::Bool:
      return Job<bool>::run(args...);
    case DType::UInt8:
      return Job<std::uint8_t>::run(args...);
    case DType::Int8:
      return Job<std::int8_t>::run(args...);
    case DType::Int16:
      return Job<std::int16_t>::run(args...);
    case DType::Int32:
      return Job<std::int32_t>::run(args...);
    case DType::Int64:
      return Job<std::int64_t>::run(args...);
    case DType::Float16:
      return Job<__half>::run(args...);
    case DType::BFloat16:
      return Job<__nv_bfloat16>::run(args...);
    case DType::Float32:
      return Job<float>::run(args...);
    case DType::Float64:
      return Job<double>::run(args...);
  }
  return kNotSupported;
}

// ---- math in the compute type (float or double), host and device --------

template <typename C>
GPU_HD bool is_nan(C x) {
  return x != x;  // false for every integer
}
GPU_HD float exp_of(float x) { return expf(x); }
GPU_HD double exp_of(double x) { return exp(x); }
GPU_HD float log_of(float x) { return logf(x); }
GPU_HD double log_of(double x) { return log(x); }
GPU_HD float sqrt_of(float x) { return sqrtf(x); }
GPU_HD double sqrt_of(double x) { return sqrt(x); }
GPU_HD float sin_of(float x) { return sinf(x); }
GPU_HD double sin_of(double x) { return sin(x); }
GPU_HD float cos_of(float x) { return cosf(x); }
GPU_HD double cos_of(double x) { return cos(x); }
GPU_HD float tanh_of(float x) { return tanhf(x); }
GPU_HD double tanh_of(double x) { return tanh(x); }
GPU_HD float erf_of(float x) { return erff(x); }
GPU_HD double erf_of(double x) { return erf(x); }
GPU_HD float pow_of(float x, float y) { return powf(x, y); }
GPU_HD double pow_of(double x, double y) { return pow(x, y); }
GPU_HD float abs_of(float x) { return fabsf(x); }
GPU_HD double abs_of(double x) { return fabs(x); }
GPU_HD float fma_of(float k, float y, float x) { return fmaf(k, y, x); }
GPU_HD double fma_of(double k, double y, double x) { return fma(k, y, x); }

template <typename C>
GPU_HD C lowest() {
  if constexpr (std::is_floating_point_v<C>) {
    return -std::numeric_limits<C>::infinity();
  } else {
    return std::numeric_limits<C>::lowest();
  }
}
template <typename C>
GPU_HD C highest() {
  if constexpr (std::is_floating_point_v<C>) {
    return std::numeric_limits<C>::infinity();
  } else {
    return std::numeric_limits<C>::max();
  }
}

template <typename C>
C scalar_as(const ScalarValue& value) {
  return std::is_floating_point_v<C> ? static_cast<C>(value.as_double)
                                     : static_cast<C>(value.as_int);
}

// *address += value, atomically on the GPU (scatter_add, index_add: several
// threads may add to one element). Types without a native atomic add are
// declined before launch (has_atomic_add).
template <typename T>
constexpr bool has_atomic_add =
    std::is_same_v<T, float> || std::is_same_v<T, double> ||
    std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16> ||
    std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;

template <typename T>
GPU_HD void atomic_add(T* address, Compute<T> value) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, std::int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(address),
              static_cast<unsigned long long>(value));
  } else {
    atomicAdd(address, store<T>(value));
  }
#else
  *address = store<T>(load(*address) + value);
#endif
}

// ---- index arithmetic --------------------------------------------------

// Maps a linear index over `dims` sizes (dimension 0 varies fastest) to an
// element offset in each of N views.
template <int N>
struct IndexMap {
  std::int32_t dims = 0;
  std::int64_t sizes[kMaxKernelDims] = {};
  std::int64_t strides[kMaxKernelDims][N] = {};
  std::int64_t base[N] = {};

  GPU_HD void offsets(std::int64_t linear, std::int64_t* at) const {
    for (int k = 0; k < N; ++k) {
      at[k] = base[k];
    }
    if (dims == 1) {  // the coalesced, contiguous case: no division
      for (int k = 0; k < N; ++k) {
        at[k] += linear * strides[0][k];
      }
      return;
    }
    for (std::int32_t d = 0; d < dims; ++d) {
      const std::int64_t index = linear % sizes[d];
      linear /= sizes[d];
      for (int k = 0; k < N; ++k) {
        at[k] += index * strides[d][k];
      }
    }
  }

  std::int64_t count() const {
    std::int64_t n = 1;
    for (std::int32_t d = 0; d < dims; ++d) {
      n *= sizes[d];
    }
    return n;
  }

  // Appends dimension d of `views` (all of its size there); sizes of 1 add
  // nothing.
  void add(std::int64_t size, const std::int64_t (&view_strides)[N]) {
    if (size == 1) {
      return;
    }
    sizes[dims] = size;
    for (int k = 0; k < N; ++k) {
      strides[dims][k] = view_strides[k];
    }
    ++dims;
  }
};

// The map over the given dimensions of views of one shape. With `reorder`,
// the innermost (smallest stride of view `by`) comes first, so neighbouring
// threads touch neighbouring elements; without, the given order stays (for
// kernels whose values depend on the linear index, such as arange).
template <int N>
IndexMap<N> map_selected(const TensorView* const (&views)[N],
                         const std::int32_t* chosen, std::int32_t count,
                         bool reorder = true, int by = 0) {
  std::int32_t order[kMaxKernelDims];
  for (std::int32_t i = 0; i < count; ++i) {
    order[i] = chosen[i];
  }
  const auto magnitude = [&](std::int32_t d) {
    const std::int64_t s = views[by]->strides[d];
    return s < 0 ? -s : s;
  };
  for (std::int32_t i = 1; reorder && i < count; ++i) {  // few dims: insertion
    for (std::int32_t j = i;
         j > 0 && magnitude(order[j]) < magnitude(order[j - 1]); --j) {
      const std::int32_t swapped = order[j];
      order[j] = order[j - 1];
      order[j - 1] = swapped;
    }
  }
  IndexMap<N> map;
  for (int k = 0; k < N; ++k) {
    map.base[k] = views[k]->offset;
  }
  for (std::int32_t i = 0; i < count; ++i) {
    std::int64_t strides[N];
    for (int k = 0; k < N; ++k) {
      strides[k] = views[k]->strides[order[i]];
    }
    map.add(views[0]->sizes[order[i]], strides);
  }
  return map;
}

// Every dimension but `skipped` (-1: none).
template <int N>
IndexMap<N> map_dims(const TensorView* const (&views)[N], std::int32_t skipped,
                     bool reorder = true) {
  std::int32_t chosen[kMaxKernelDims];
  std::int32_t count = 0;
  for (std::int32_t d = 0; d < views[0]->dim; ++d) {
    if (d != skipped) {
      chosen[count++] = d;
    }
  }
  return map_selected(views, chosen, count, reorder);
}

template <int N>
IndexMap<N> map_all(const TensorView* const (&views)[N]) {
  return map_dims(views, -1);
}

// Rows of `views` along `dim`: the map over the other dimensions, and each
// view's stride along dim.
template <int N>
struct Rows {
  IndexMap<N> map;
  std::int64_t length = 1;
  std::int64_t step[N] = {};

  Rows(const TensorView* const (&views)[N], std::int32_t dim)
      : map(map_dims(views, views[0]->dim > 0 ? dim : -1)) {
    if (views[0]->dim > 0) {
      length = views[0]->sizes[dim];
      for (int k = 0; k < N; ++k) {
        step[k] = views[k]->strides[dim];
      }
    }
  }
  std::int64_t count() const { return length == 0 ? 0 : map.count(); }
};

// kVector elements read or written as one aligned access (16 bytes for
// float), as CUDA's memory-bound kernels access memory.
template <typename T, int kVector>
struct alignas(sizeof(T) * kVector) Packed {
  T v[kVector];
};

template <typename T>
T* data_of(const TensorView& view) {
  return static_cast<T*>(view.data);
}

// ---- launches ----------------------------------------------------------

constexpr int kThreads = 256;

#if defined(__CUDACC__)
template <typename Fn>
__global__ void each_index_kernel(std::int64_t n, Fn fn) {
  const std::int64_t step = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
  for (std::int64_t i =
           blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += step) {
    fn(i);
  }
}

inline Status last_launch_status() {
  return static_cast<Status>(cudaGetLastError());
}

// The block's values shared[0 .. blockDim.x) folded into shared[0] by
// combine(a, b), a tree as CUDA's reductions fold a block (blockDim.x a power
// of two); every thread of the block calls it, and may read shared[0] after.
template <typename V, typename Combine>
__device__ void combine_in_block(V* shared, Combine combine) {
  __syncthreads();
  for (unsigned width = blockDim.x / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) {
      shared[threadIdx.x] =
          combine(shared[threadIdx.x], shared[threadIdx.x + width]);
    }
    __syncthreads();
  }
}
#endif

// fn(i) for every i in [0, n), enqueued on ctx.stream.
template <typename Fn>
Status launch_each(const KernelContext& ctx, std::int64_t n, const Fn& fn) {
  if (n <= 0) {
    return kSuccess;
  }
#if defined(__CUDACC__)
  const std::int64_t wanted = (n + kThreads - 1) / kThreads;
  const unsigned blocks =
      static_cast<unsigned>(wanted < (1 << 20) ? wanted : (1 << 20));
  each_index_kernel<<<blocks, kThreads, 0,
                      static_cast<cudaStream_t>(ctx.stream)>>>(n, fn);
  return last_launch_status();
#else
  (void)ctx;
  for (std::int64_t i = 0; i < n; ++i) {
    fn(i);
  }
  return kSuccess;
#endif
}

}  // namespace gpu
