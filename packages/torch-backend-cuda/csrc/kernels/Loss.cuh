// nll_loss forward and backward over input (N, C), target (N) Int64 and an
// optional class weight (C). Forward: one thread per sample for
// Reduction::None, else the batch's sums spread over the GPU (in double; a
// language model's batch is thousands of tokens); backward: one thread per
// sample.
#pragma once

#include "Portable.cuh"
#include "Sums.cuh"

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

// The class weight of target t (1 without a weight).
template <typename T>
GPU_HD Compute<T> class_weight(const TensorView& weight, std::int64_t t) {
  return weight.data == nullptr ? Compute<T>(1) : load(at1<T>(weight, t));
}

// Reduction::None: sample i's loss.
template <typename T>
struct NllLossFn {
  NllLossCall call;
  GPU_HD void operator()(std::int64_t i) const {
    if (i == 0) {  // as PyTorch's kernels: no weight is summed
      static_cast<T*>(call.total_weight.data)[call.total_weight.offset] =
          store<T>(0);
    }
    const std::int64_t t = at1<std::int64_t>(call.target, i);
    at1<T>(call.out, i) = t == call.ignore_index
                              ? store<T>(0)
                              : store<T>(-class_weight<T>(call.weight, t) *
                                         load(at2<T>(call.input, i, t)));
  }
};

// Mean or Sum: the weighted losses and the weights of the batch, summed
// across the GPU (Sums.cuh), then the result from the two sums.
template <typename T>
struct NllLossItems {
  NllLossCall call;
  GPU_HD void operator()(std::int64_t, std::int64_t n, double* sums) const {
    const std::int64_t t = at1<std::int64_t>(call.target, n);
    if (t != call.ignore_index) {
      const double w = class_weight<T>(call.weight, t);
      sums[0] -= w * static_cast<double>(load(at2<T>(call.input, n, t)));
      sums[1] += w;
    }
  }
};
template <typename T>
struct NllLossTotalFn {
  NllLossCall call;
  const Sums<2>* sums;
  GPU_HD void operator()(std::int64_t) const {
    const double loss = sums->v[0], total = sums->v[1];
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
      if (call.reduction == Reduction::None) {
        return launch_each(ctx, call.input.sizes[0], NllLossFn<T>{call});
      }
      torch_backend::KernelWorkspace workspace(ctx, sizeof(Sums<2>));
      auto* sums = static_cast<Sums<2>*>(workspace.get());
      const Status status = sum_items<2>(ctx, 1, call.input.sizes[0],
                                         NllLossItems<T>{call}, sums);
      return status != kSuccess
                 ? status
                 : launch_each(ctx, 1, NllLossTotalFn<T>{call, sums});
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
