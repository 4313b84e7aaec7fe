// layer_norm and batch_norm, forward and backward. Statistics are folded in
// double by one thread per row (layer_norm) or channel (batch_norm);
// normalising and the gradients of the input are one thread per row or
// element.
#pragma once

#include "Portable.cuh"

namespace gpu {

using torch_backend::BatchNormBackwardCall;
using torch_backend::BatchNormCall;
using torch_backend::LayerNormBackwardCall;
using torch_backend::LayerNormCall;

// Element k of an optional 1-D view (absent: `otherwise`).
template <typename T>
GPU_HD double value_or(const TensorView& view, std::int64_t k,
                       double otherwise) {
  return view.data == nullptr
             ? otherwise
             : static_cast<double>(load(static_cast<const T*>(
                   view.data)[view.offset + k * view.strides[0]]));
}
template <typename T>
GPU_HD void put(const TensorView& view, std::int64_t k, double value) {
  static_cast<T*>(view.data)[view.offset + k * view.strides[0]] =
      store<T>(value);
}

// ---- layer_norm: input (M, N) contiguous ------------------------------

template <typename T>
struct LayerNormFn {
  LayerNormCall call;
  GPU_HD void operator()(std::int64_t row) const {
    const std::int64_t n = call.input.sizes[1];
    const T* x =
        static_cast<const T*>(call.input.data) + call.input.offset + row * n;
    T* y = static_cast<T*>(call.out.data) + call.out.offset + row * n;
    double sum = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      sum += load(x[j]);
    }
    const double mean = sum / static_cast<double>(n);
    double squares = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double centred = load(x[j]) - mean;
      squares += centred * centred;
    }
    const double rstd = 1 / sqrt(squares / static_cast<double>(n) + call.eps);
    for (std::int64_t j = 0; j < n; ++j) {
      y[j] =
          store<T>((load(x[j]) - mean) * rstd * value_or<T>(call.weight, j, 1) +
                   value_or<T>(call.bias, j, 0));
    }
    put<T>(call.mean, row, mean);
    put<T>(call.rstd, row, rstd);
  }
};

// grad_input, a row per thread: rstd * (g - mean(g) - xhat * mean(g * xhat))
// with g = grad_out * weight.
template <typename T>
struct LayerNormInputGradFn {
  LayerNormBackwardCall call;
  GPU_HD void operator()(std::int64_t row) const {
    const std::int64_t n = call.input.sizes[1];
    const T* x =
        static_cast<const T*>(call.input.data) + call.input.offset + row * n;
    const T* dy = static_cast<const T*>(call.grad_out.data) +
                  call.grad_out.offset + row * n;
    T* dx = static_cast<T*>(call.grad_input.data) + call.grad_input.offset +
            row * n;
    const double mean = value_or<T>(call.mean, row, 0);
    const double rstd = value_or<T>(call.rstd, row, 1);
    double sum_g = 0, sum_g_xhat = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const double g = load(dy[j]) * value_or<T>(call.weight, j, 1);
      sum_g += g;
      sum_g_xhat += g * (load(x[j]) - mean) * rstd;
    }
    const double count = static_cast<double>(n);
    for (std::int64_t j = 0; j < n; ++j) {
      const double g = load(dy[j]) * value_or<T>(call.weight, j, 1);
      const double xhat = (load(x[j]) - mean) * rstd;
      dx[j] = store<T>(rstd * (g - sum_g / count - xhat * sum_g_xhat / count));
    }
  }
};

// grad_weight and grad_bias, a column per thread.
template <typename T>
struct LayerNormParamGradFn {
  LayerNormBackwardCall call;
  GPU_HD void operator()(std::int64_t column) const {
    const std::int64_t m = call.input.sizes[0], n = call.input.sizes[1];
    const T* x = static_cast<const T*>(call.input.data) + call.input.offset;
    const T* dy =
        static_cast<const T*>(call.grad_out.data) + call.grad_out.offset;
    double weight_grad = 0, bias_grad = 0;
    for (std::int64_t row = 0; row < m; ++row) {
      const double g = load(dy[row * n + column]);
      weight_grad +=
          g * (load(x[row * n + column]) - value_or<T>(call.mean, row, 0)) *
          value_or<T>(call.rstd, row, 1);
      bias_grad += g;
    }
    if (call.grad_weight.data != nullptr) {
      put<T>(call.grad_weight, column, weight_grad);
    }
    if (call.grad_bias.data != nullptr) {
      put<T>(call.grad_bias, column, bias_grad);
    }
  }
};

template <typename T>
struct LayerNormJob {
  static Status run(const KernelContext& ctx, const LayerNormCall& call) {
    if constexpr (!is_floating<T>) {
      return kNotSupported;
    } else {
      return launch_each(ctx, call.input.sizes[0], LayerNormFn<T>{call});
    }
  }
};
template <typename T>
struct LayerNormBackwardJob {
  static Status run(const KernelContext& ctx,
                    const LayerNormBackwardCall& call) {
    if constexpr (!is_floating<T>) {
      return kNotSupported;
    } else {
      Status status = kSuccess;
      if (call.grad_input.data != nullptr) {
        status = launch_each(ctx, call.input.sizes[0],
                             LayerNormInputGradFn<T>{call});
      }
      if (status == kSuccess && (call.grad_weight.data != nullptr ||
                                 call.grad_bias.data != nullptr)) {
        status = launch_each(ctx, call.input.sizes[1],
                             LayerNormParamGradFn<T>{call});
      }
      return status;
    }
  }
};

inline Status layer_norm(const KernelContext& ctx, const LayerNormCall& call) {
  return dispatch<LayerNormJob>(call.input.dtype, ctx, call);
}
inline Status layer_norm_backward(const KernelContext& ctx,
                                  const LayerNormBackwardCall& call) {
  return dispatch<LayerNormBackwardJob>(call.input.dtype, ctx, call);
}

// ---- batch_norm: input (N, C, L) contiguous ---------------------------

struct Channels {
  std::int64_t n, c, l;
  GPU_HD std::int64_t count() const { return n * l; }
  GPU_HD std::int64_t index(std::int64_t sample, std::int64_t channel,
                            std::int64_t k) const {
    return (sample * c + channel) * l + k;
  }
};

inline Channels channels_of(const TensorView& input) {
  return {input.sizes[0], input.sizes[1], input.sizes[2]};
}

// Training statistics, a channel per thread: save_mean, save_invstd, and the
// running statistics updated in place (the variance unbiased).
template <typename T>
struct BatchStatsFn {
  BatchNormCall call;
  Channels shape;
  GPU_HD void operator()(std::int64_t channel) const {
    const T* x = static_cast<const T*>(call.input.data) + call.input.offset;
    double sum = 0;
    for (std::int64_t s = 0; s < shape.n; ++s) {
      for (std::int64_t k = 0; k < shape.l; ++k) {
        sum += load(x[shape.index(s, channel, k)]);
      }
    }
    const double count = static_cast<double>(shape.count());
    const double mean = sum / count;
    double squares = 0;
    for (std::int64_t s = 0; s < shape.n; ++s) {
      for (std::int64_t k = 0; k < shape.l; ++k) {
        const double centred = load(x[shape.index(s, channel, k)]) - mean;
        squares += centred * centred;
      }
    }
    put<T>(call.save_mean, channel, mean);
    put<T>(call.save_invstd, channel, 1 / sqrt(squares / count + call.eps));
    const double m = call.momentum;
    if (call.running_mean.data != nullptr) {
      put<T>(call.running_mean, channel,
             (1 - m) * value_or<T>(call.running_mean, channel, 0) + m * mean);
    }
    if (call.running_var.data != nullptr) {
      const double unbiased = count > 1 ? squares / (count - 1) : squares;
      put<T>(
          call.running_var, channel,
          (1 - m) * value_or<T>(call.running_var, channel, 0) + m * unbiased);
    }
  }
};

// The channel's mean and inverse standard deviation: the batch's (training)
// or the running ones (evaluation).
template <typename T>
GPU_HD void channel_stats(const TensorView& save_mean,
                          const TensorView& save_invstd,
                          const TensorView& running_mean,
                          const TensorView& running_var, bool training,
                          double eps, std::int64_t channel, double* mean,
                          double* invstd) {
  if (training) {
    *mean = value_or<T>(save_mean, channel, 0);
    *invstd = value_or<T>(save_invstd, channel, 1);
  } else {
    *mean = value_or<T>(running_mean, channel, 0);
    *invstd = 1 / sqrt(value_or<T>(running_var, channel, 1) + eps);
  }
}

template <typename T>
struct BatchNormalizeFn {
  BatchNormCall call;
  Channels shape;
  GPU_HD void operator()(std::int64_t i) const {
    const std::int64_t channel = (i / shape.l) % shape.c;
    double mean, invstd;
    channel_stats<T>(call.save_mean, call.save_invstd, call.running_mean,
                     call.running_var, call.training, call.eps, channel, &mean,
                     &invstd);
    const T* x = static_cast<const T*>(call.input.data) + call.input.offset;
    T* y = static_cast<T*>(call.out.data) + call.out.offset;
    y[i] = store<T>((load(x[i]) - mean) * invstd *
                        value_or<T>(call.weight, channel, 1) +
                    value_or<T>(call.bias, channel, 0));
  }
};

// Per channel: grad_bias = sum(dy), grad_weight = sum(dy * xhat); then
// grad_input per element (training: through the batch statistics).
template <typename T>
struct BatchGradSums {
  BatchNormBackwardCall call;
  Channels shape;
  GPU_HD void sums(std::int64_t channel, double mean, double invstd,
                   double* sum_dy, double* sum_dy_xhat) const {
    const T* x = static_cast<const T*>(call.input.data) + call.input.offset;
    const T* dy =
        static_cast<const T*>(call.grad_out.data) + call.grad_out.offset;
    *sum_dy = 0;
    *sum_dy_xhat = 0;
    for (std::int64_t s = 0; s < shape.n; ++s) {
      for (std::int64_t k = 0; k < shape.l; ++k) {
        const std::int64_t i = shape.index(s, channel, k);
        const double g = load(dy[i]);
        *sum_dy += g;
        *sum_dy_xhat += g * (load(x[i]) - mean) * invstd;
      }
    }
  }
  GPU_HD void stats(std::int64_t channel, double* mean, double* invstd) const {
    channel_stats<T>(call.save_mean, call.save_invstd, call.running_mean,
                     call.running_var, call.training, call.eps, channel, mean,
                     invstd);
  }
};

template <typename T>
struct BatchParamGradFn {
  BatchGradSums<T> grads;
  GPU_HD void operator()(std::int64_t channel) const {
    double mean, invstd, sum_dy, sum_dy_xhat;
    grads.stats(channel, &mean, &invstd);
    grads.sums(channel, mean, invstd, &sum_dy, &sum_dy_xhat);
    if (grads.call.grad_weight.data != nullptr) {
      put<T>(grads.call.grad_weight, channel, sum_dy_xhat);
    }
    if (grads.call.grad_bias.data != nullptr) {
      put<T>(grads.call.grad_bias, channel, sum_dy);
    }
  }
};

// grad_input, a channel per thread (training: through the batch statistics,
// whose sums the thread folds first).
template <typename T>
struct BatchInputGradFn {
  BatchGradSums<T> grads;
  GPU_HD void operator()(std::int64_t channel) const {
    const BatchNormBackwardCall& call = grads.call;
    const Channels& shape = grads.shape;
    double mean, invstd, sum_dy = 0, sum_dy_xhat = 0;
    grads.stats(channel, &mean, &invstd);
    if (call.training) {
      grads.sums(channel, mean, invstd, &sum_dy, &sum_dy_xhat);
    }
    const double w = value_or<T>(call.weight, channel, 1);
    const double count = static_cast<double>(shape.count());
    const T* x = static_cast<const T*>(call.input.data) + call.input.offset;
    const T* dy =
        static_cast<const T*>(call.grad_out.data) + call.grad_out.offset;
    T* dx = static_cast<T*>(call.grad_input.data) + call.grad_input.offset;
    for (std::int64_t s = 0; s < shape.n; ++s) {
      for (std::int64_t k = 0; k < shape.l; ++k) {
        const std::int64_t i = shape.index(s, channel, k);
        double g = load(dy[i]);
        if (call.training) {
          const double xhat = (load(x[i]) - mean) * invstd;
          g = g - sum_dy / count - xhat * sum_dy_xhat / count;
        }
        dx[i] = store<T>(g * w * invstd);
      }
    }
  }
};

template <typename T>
struct BatchNormJob {
  static Status run(const KernelContext& ctx, const BatchNormCall& call) {
    if constexpr (!is_floating<T>) {
      return kNotSupported;
    } else {
      const Channels shape = channels_of(call.input);
      Status status = kSuccess;
      if (call.training) {
        status = launch_each(ctx, shape.c, BatchStatsFn<T>{call, shape});
      }
      if (status == kSuccess) {
        status = launch_each(ctx, shape.n * shape.c * shape.l,
                             BatchNormalizeFn<T>{call, shape});
      }
      return status;
    }
  }
};
template <typename T>
struct BatchNormBackwardJob {
  static Status run(const KernelContext& ctx,
                    const BatchNormBackwardCall& call) {
    if constexpr (!is_floating<T>) {
      return kNotSupported;
    } else {
      const BatchGradSums<T> grads{call, channels_of(call.input)};
      Status status = kSuccess;
      if (call.grad_input.data != nullptr) {
        status = launch_each(ctx, grads.shape.c, BatchInputGradFn<T>{grads});
      }
      if (status == kSuccess && (call.grad_weight.data != nullptr ||
                                 call.grad_bias.data != nullptr)) {
        status = launch_each(ctx, grads.shape.c, BatchParamGradFn<T>{grads});
      }
      return status;
    }
  }
};

inline Status batch_norm(const KernelContext& ctx, const BatchNormCall& call) {
  return dispatch<BatchNormJob>(call.input.dtype, ctx, call);
}
inline Status batch_norm_backward(const KernelContext& ctx,
                                  const BatchNormBackwardCall& call) {
  return dispatch<BatchNormBackwardJob>(call.input.dtype, ctx, call);
}

}  // namespace gpu
