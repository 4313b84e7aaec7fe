// nll_loss forward and backward over input (N, C), target (N) Int64 and an
// optional class weight (C). Forward: one thread per sample for
// Reduction::None, else one thread folding the batch in double (batches are
// short); backward: one thread per sample.
#pragma once

#include "Portable.cuh"

namespace gpu {

using torch_backend::NllLossBackwardCall;
using torch_backend::NllLossCall;
using torch_backend::Reduction;

// Element (i, j) of a 2-D view, k of a 1-D one.
template <typename T>
GPU_HD T& at2(const TensorView& view, std::int64_t i, std::int64_t j) {
  return static_cast<T*>(
      view.data)[view.offset + i * view.strides[0] + j * view.strides[1]];
}
template <typename T>
GPU_HD T& at1(const TensorView& view, std::int64_t k) {
  return static_cast<T*>(view.data)[view.offset + k * view.strides[0]];
}

template <typename T>
struct NllLossFn {
  NllLossCall call;

  GPU_HD Compute<T> weight_of(std::int64_t target) const {
    return call.weight.data == nullptr ? Compute<T>(1)
                                       : load(at1<T>(call.weight, target));
  }
  GPU_HD void operator()(std::int64_t i) const {
    const std::int64_t samples = call.input.sizes[0];
    if (call.reduction == Reduction::None) {
      if (i == 0) {  // as PyTorch's kernels: no weight is summed
        static_cast<T*>(call.total_weight.data)[call.total_weight.offset] =
            store<T>(0);
      }
      const std::int64_t t = at1<std::int64_t>(call.target, i);
      at1<T>(call.out, i) =
          t == call.ignore_index
              ? store<T>(0)
              : store<T>(-weight_of(t) * load(at2<T>(call.input, i, t)));
      return;
    }
    double loss = 0, total = 0;
    for (std::int64_t n = 0; n < samples; ++n) {
      const std::int64_t t = at1<std::int64_t>(call.target, n);
      if (t != call.ignore_index) {
        const double w = weight_of(t);
        total += w;
        loss -= w * static_cast<double>(load(at2<T>(call.input, n, t)));
      }
    }
    static_cast<T*>(call.total_weight.data)[call.total_weight.offset] =
        store<T>(total);
    static_cast<T*>(call.out.data)[call.out.offset] =
        store<T>(call.reduction == Reduction::Mean ? loss / total : loss);
  }
};

template <typename T>
struct NllLossBackwardFn {
  NllLossBackwardCall call;

  GPU_HD void operator()(std::int64_t i) const {
    const std::int64_t t = at1<std::int64_t>(call.target, i);
    if (t == call.ignore_index) {
      return;
    }
    using C = Compute<T>;
    const C w =
        call.weight.data == nullptr ? C(1) : load(at1<T>(call.weight, t));
    const T* grad_output = static_cast<const T*>(call.grad_output.data);
    C grad = call.reduction == Reduction::None
                 ? load(grad_output[call.grad_output.offset +
                                    i * call.grad_output.strides[0]])
                 : load(grad_output[call.grad_output.offset]);
    if (call.reduction == Reduction::Mean) {
      grad /= load(static_cast<const T*>(
          call.total_weight.data)[call.total_weight.offset]);
    }
    at2<T>(call.grad_input, i, t) = store<T>(-w * grad);
  }
};

template <typename T>
struct NllLossJob {
  static Status run(const KernelContext& ctx, const NllLossCall& call) {
    if constexpr (!is_floating<T>) {
      return kNotSupported;
    } else {
      const std::int64_t threads =
          call.reduction == Reduction::None ? call.input.sizes[0] : 1;
      return launch_each(ctx, threads, NllLossFn<T>{call});
    }
  }
};
template <typename T>
struct NllLossBackwardJob {
  static Status run(const KernelContext& ctx, const NllLossBackwardCall& call) {
    if constexpr (!is_floating<T>) {
      return kNotSupported;
    } else {
      return launch_each(ctx, call.grad_input.sizes[0],
                         NllLossBackwardFn<T>{call});
    }
  }
};

inline Status nll_loss(const KernelContext& ctx, const NllLossCall& call) {
  return dispatch<NllLossJob>(call.input.dtype, ctx, call);
}
inline Status nll_loss_backward(const KernelContext& ctx,
                                const NllLossBackwardCall& call) {
  return dispatch<NllLossBackwardJob>(call.grad_input.dtype, ctx, call);
}

}  // namespace gpu
