// The multi-tensor form of element-wise kernels (DeviceKernels.h:
// MultiTensorKernel), ATen's _foreach_ ops: a list of calls in one launch per
// kTensors tensors, as CUDA's multi_tensor_apply does, instead of one launch
// per tensor. Each launch takes its tensors' pointers, lengths and ops by
// value (kernel arguments, under CUDA's 4 KB) and each block serves one chunk
// of one tensor. Every view is one dense dimension (core's guarantee).
#pragma once

#include "Elementwise.cuh"

namespace gpu {

// Up to kTensors calls of one element op on dtype T, as kernel arguments.
template <typename T, int Inputs, typename Op>
struct TensorList {
  // Bounded by the 4 KB of kernel arguments: about 80 bytes per tensor for
  // three inputs (addcmul), with room for the block table.
  static constexpr int kTensors = 36;
  // Elements per block: CUDA's multi_tensor_apply chunk.
  static constexpr std::int64_t kChunk = 65536;

  T* out[kTensors];
  MapInputs<T, Inputs> in[kTensors];
  std::int64_t n[kTensors];
  Op op[kTensors];
  // Blocks [first_block[t], first_block[t + 1]) serve tensor t.
  std::int32_t first_block[kTensors + 1];
  std::int32_t count;

  GPU_HD void apply(std::int32_t t, std::int64_t i) const {
    Compute<T> x[Inputs > 0 ? Inputs : 1];
    for (int k = 0; k < Inputs; ++k) {
      x[k] = in[t].in[k] != nullptr ? load(in[t].in[k][i]) : in[t].scalar[k];
    }
    out[t][i] = map_one<T, Compute<T>, Inputs>(op[t], x);
  }
};

#if defined(__CUDACC__)
template <typename T, int Inputs, typename Op>
__global__ void multi_tensor_kernel(TensorList<T, Inputs, Op> list) {
  using List = TensorList<T, Inputs, Op>;
  const std::int32_t block = static_cast<std::int32_t>(blockIdx.x);
  std::int32_t t = 0;
  while (t + 1 < list.count && block >= list.first_block[t + 1]) {
    ++t;
  }
  const std::int64_t begin =
      static_cast<std::int64_t>(block - list.first_block[t]) * List::kChunk;
  const std::int64_t end =
      begin + List::kChunk < list.n[t] ? begin + List::kChunk : list.n[t];
  for (std::int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    list.apply(t, i);
  }
}
#endif

// Runs one filled list: a launch on the GPU, a loop in the host emulation.
template <typename T, int Inputs, typename Op>
Status run_list(const KernelContext& ctx, TensorList<T, Inputs, Op>& list) {
  using List = TensorList<T, Inputs, Op>;
  list.first_block[0] = 0;
  for (std::int32_t t = 0; t < list.count; ++t) {
    const std::int64_t chunks = (list.n[t] + List::kChunk - 1) / List::kChunk;
    list.first_block[t + 1] =
        list.first_block[t] + static_cast<std::int32_t>(chunks);
  }
#if defined(__CUDACC__)
  multi_tensor_kernel<T, Inputs, Op>
      <<<static_cast<unsigned>(list.first_block[list.count]), kThreads, 0,
         static_cast<cudaStream_t>(ctx.stream)>>>(list);
  return last_launch_status();
#else
  (void)ctx;
  for (std::int32_t t = 0; t < list.count; ++t) {
    for (std::int64_t i = 0; i < list.n[t]; ++i) {
      list.apply(t, i);
    }
  }
  return kSuccess;
#endif
}

// Every call of the list with Op<C>::make(call), kTensors at a time.
template <template <typename> class Op, int Inputs, bool FloatingOnly>
struct MultiTensorJob {
  template <typename T>
  struct Job {
    static Status run(const KernelContext& ctx, const ElementwiseCall* calls,
                      std::int32_t count) {
      if constexpr (FloatingOnly && !is_floating<T>) {
        return kNotSupported;  // before anything is enqueued: core goes per
                               // tensor
      } else {
        using List = TensorList<T, Inputs, Op<Compute<T>>>;
        static_assert(sizeof(List) <= 4096, "a launch's arguments exceed 4 KB");
        List list{};
        for (std::int32_t t = 0; t < count; ++t) {
          const ElementwiseCall& call = calls[t];
          list.out[list.count] = data_of<T>(call.out) + call.out.offset;
          list.in[list.count] = map_inputs<T, Inputs>(call);
          for (int k = 0; k < Inputs; ++k) {
            if (list.in[list.count].in[k] != nullptr) {
              list.in[list.count].in[k] += call.inputs[k].offset;
            }
          }
          list.n[list.count] = call.out.sizes[0];
          list.op[list.count] = Op<Compute<T>>::make(call);
          if (++list.count == List::kTensors || t + 1 == count) {
            const Status status = run_list(ctx, list);
            if (status != kSuccess) {
              return status;
            }
            list.count = 0;
          }
        }
        return kSuccess;
      }
    }
  };
};

template <template <typename> class Op, int Inputs, bool FloatingOnly>
Status multi_tensor(const KernelContext& ctx, const ElementwiseCall* calls,
                    std::int32_t count) {
  return dispatch<MultiTensorJob<Op, Inputs, FloatingOnly>::template Job>(
      calls[0].out.dtype, ctx, calls, count);
}

// The multi-tensor kernels core's _foreach_ ops use, by the element-wise
// kernels' names (the same ops, so the same results as per tensor).
inline void register_multi_tensor(torch_backend::KernelRegistry& kernels) {
  kernels.multi_tensor("add", &multi_tensor<Add, 2, false>);
  kernels.multi_tensor("sub", &multi_tensor<Sub, 2, false>);
  kernels.multi_tensor("mul", &multi_tensor<Mul, 2, false>);
  kernels.multi_tensor("div", &multi_tensor<Div, 2, true>);
  kernels.multi_tensor("addcmul", &multi_tensor<Addcmul, 3, false>);
  kernels.multi_tensor("addcdiv", &multi_tensor<Addcdiv, 3, true>);
  kernels.multi_tensor("lerp_scalar", &multi_tensor<LerpScalar, 2, true>);
  kernels.multi_tensor("sqrt", &multi_tensor<Sqrt, 1, true>);
}

}  // namespace gpu
