// layer_norm and batch_norm, forward and backward. Statistics and parameter
// gradients are sums per row, column or channel spread over the GPU
// (Sums.cuh), folded in double; normalising and the input's gradient are one
// thread per element.
#pragma once

#include "Portable.cuh"
#include "Sums.cuh"

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

// The mean and 1 / sqrt(variance + eps) of `count` values from their sum and
// sum of squares (in double: float data loses nothing measurable).
struct Moments {
  double mean, variance;
  GPU_HD Moments(const Sums<2>& sums, double count)
      : mean(sums.v[0] / count),
        variance(fmax(sums.v[1] / count - mean * mean, 0.0)) {}
  GPU_HD double invstd(double eps) const { return 1 / sqrt(variance + eps); }
};

template <typename T>
GPU_HD const T* input_of(const TensorView& view) {
  return static_cast<const T*>(view.data) + view.offset;
}
template <typename T>
GPU_HD T* output_of(const TensorView& view) {
  return static_cast<T*>(view.data) + view.offset;
}

// ---- layer_norm: input (M, N) contiguous ------------------------------

// Row sums of x and x^2.
template <typename T>
struct RowMomentItems {
  const T* x;
  std::int64_t n;
  GPU_HD void operator()(std::int64_t row, std::int64_t j, double* sums) const {
    const double v = load(x[row * n + j]);
    sums[0] += v;
    sums[1] += v * v;
  }
};

// Every element normalised from its row's sums; the row's first element's
// thread writes the row's mean and rstd.
template <typename T>
struct LayerNormalizeFn {
  LayerNormCall call;
  const Sums<2>* rows;
  GPU_HD void operator()(std::int64_t i) const {
    const std::int64_t n = call.input.sizes[1];
    const std::int64_t row = i / n, j = i % n;
    const Moments moments(rows[row], static_cast<double>(n));
    const double rstd = moments.invstd(call.eps);
    output_of<T>(call.out)[i] =
        store<T>((load(input_of<T>(call.input)[i]) - moments.mean) * rstd *
                     value_or<T>(call.weight, j, 1) +
                 value_or<T>(call.bias, j, 0));
    if (j == 0) {
      put<T>(call.mean, row, moments.mean);
      put<T>(call.rstd, row, rstd);
    }
  }
};

// With g = grad_out * weight and xhat the normalised input: per row, the
// sums of g and g * xhat; per column, of grad_out * xhat (grad_weight) and
// grad_out (grad_bias).
template <typename T>
struct LayerNormGradItems {
  LayerNormBackwardCall call;
  bool by_column;  // output = column, item = row; else output = row
  GPU_HD void operator()(std::int64_t output, std::int64_t item,
                         double* sums) const {
    const std::int64_t n = call.input.sizes[1];
    const std::int64_t row = by_column ? item : output;
    const std::int64_t column = by_column ? output : item;
    const std::int64_t i = row * n + column;
    const double xhat =
        (load(input_of<T>(call.input)[i]) - value_or<T>(call.mean, row, 0)) *
        value_or<T>(call.rstd, row, 1);
    double g = load(input_of<T>(call.grad_out)[i]);
    if (!by_column) {
      g *= value_or<T>(call.weight, column, 1);
    }
    sums[0] += g;
    sums[1] += g * xhat;
  }
};

// grad_input: rstd * (g - mean(g) - xhat * mean(g * xhat)).
template <typename T>
struct LayerNormInputGradFn {
  LayerNormBackwardCall call;
  const Sums<2>* rows;
  GPU_HD void operator()(std::int64_t i) const {
    const std::int64_t n = call.input.sizes[1];
    const std::int64_t row = i / n, column = i % n;
    const double rstd = value_or<T>(call.rstd, row, 1);
    const double xhat =
        (load(input_of<T>(call.input)[i]) - value_or<T>(call.mean, row, 0)) *
        rstd;
    const double g = load(input_of<T>(call.grad_out)[i]) *
                     value_or<T>(call.weight, column, 1);
    const double count = static_cast<double>(n);
    output_of<T>(call.grad_input)[i] = store<T>(
        rstd * (g - rows[row].v[0] / count - xhat * rows[row].v[1] / count));
  }
};

// grad_bias and grad_weight of a column from its sums.
template <typename T>
struct ParamGradFn {
  TensorView grad_weight, grad_bias;
  const Sums<2>* columns;  // sum of grad_out, sum of grad_out * xhat
  GPU_HD void operator()(std::int64_t column) const {
    if (grad_weight.data != nullptr) {
      put<T>(grad_weight, column, columns[column].v[1]);
    }
    if (grad_bias.data != nullptr) {
      put<T>(grad_bias, column, columns[column].v[0]);
    }
  }
};

template <typename T>
struct LayerNormJob {
  static Status run(const KernelContext& ctx, const LayerNormCall& call) {
    if constexpr (!is_floating<T>) {
      return kNotSupported;
    } else {
      const std::int64_t m = call.input.sizes[0], n = call.input.sizes[1];
      torch_backend::KernelWorkspace rows(
          ctx, static_cast<std::size_t>(m) * sizeof(Sums<2>));
      auto* sums = static_cast<Sums<2>*>(rows.get());
      const Status status = sum_items<2>(
          ctx, m, n, RowMomentItems<T>{input_of<T>(call.input), n}, sums);
      return status != kSuccess
                 ? status
                 : launch_each(ctx, m * n, LayerNormalizeFn<T>{call, sums});
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
      const std::int64_t m = call.input.sizes[0], n = call.input.sizes[1];
      torch_backend::KernelWorkspace workspace(
          ctx, static_cast<std::size_t>(m > n ? m : n) * sizeof(Sums<2>));
      auto* sums = static_cast<Sums<2>*>(workspace.get());
      Status status = kSuccess;
      if (call.grad_input.data != nullptr) {
        status =
            sum_items<2>(ctx, m, n, LayerNormGradItems<T>{call, false}, sums);
        if (status == kSuccess) {
          status = launch_each(ctx, m * n, LayerNormInputGradFn<T>{call, sums});
        }
      }
      if (status == kSuccess && (call.grad_weight.data != nullptr ||
                                 call.grad_bias.data != nullptr)) {
        status =
            sum_items<2>(ctx, n, m, LayerNormGradItems<T>{call, true}, sums);
        if (status == kSuccess) {
          status = launch_each(
              ctx, n, ParamGradFn<T>{call.grad_weight, call.grad_bias, sums});
        }
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

// Channel sums of x and x^2 (item j: sample j / L, position j % L).
template <typename T>
struct ChannelMomentItems {
  const T* x;
  Channels shape;
  GPU_HD void operator()(std::int64_t channel, std::int64_t j,
                         double* sums) const {
    const double v = load(x[shape.index(j / shape.l, channel, j % shape.l)]);
    sums[0] += v;
    sums[1] += v * v;
  }
};

// Training statistics of a channel from its sums: save_mean, save_invstd, and
// the running statistics updated in place (the variance unbiased).
template <typename T>
struct BatchStatsFn {
  BatchNormCall call;
  Channels shape;
  const Sums<2>* channels;
  GPU_HD void operator()(std::int64_t channel) const {
    const double count = static_cast<double>(shape.count());
    const Moments moments(channels[channel], count);
    put<T>(call.save_mean, channel, moments.mean);
    put<T>(call.save_invstd, channel, moments.invstd(call.eps));
    const double m = call.momentum;
    if (call.running_mean.data != nullptr) {
      put<T>(call.running_mean, channel,
             (1 - m) * value_or<T>(call.running_mean, channel, 0) +
                 m * moments.mean);
    }
    if (call.running_var.data != nullptr) {
      const double unbiased =
          count > 1 ? moments.variance * count / (count - 1) : moments.variance;
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
    output_of<T>(call.out)[i] =
        store<T>((load(input_of<T>(call.input)[i]) - mean) * invstd *
                     value_or<T>(call.weight, channel, 1) +
                 value_or<T>(call.bias, channel, 0));
  }
};

// Per channel: the sums of dy (grad_bias) and dy * xhat (grad_weight).
template <typename T>
struct BatchGradItems {
  BatchNormBackwardCall call;
  Channels shape;
  GPU_HD void stats(std::int64_t channel, double* mean, double* invstd) const {
    channel_stats<T>(call.save_mean, call.save_invstd, call.running_mean,
                     call.running_var, call.training, call.eps, channel, mean,
                     invstd);
  }
  GPU_HD void operator()(std::int64_t channel, std::int64_t j,
                         double* sums) const {
    double mean, invstd;
    stats(channel, &mean, &invstd);
    const std::int64_t i = shape.index(j / shape.l, channel, j % shape.l);
    const double g = load(input_of<T>(call.grad_out)[i]);
    sums[0] += g;
    sums[1] += g * (load(input_of<T>(call.input)[i]) - mean) * invstd;
  }
};

// grad_input per element (training: through the batch statistics).
template <typename T>
struct BatchInputGradFn {
  BatchGradItems<T> grads;
  const Sums<2>* channels;
  GPU_HD void operator()(std::int64_t i) const {
    const BatchNormBackwardCall& call = grads.call;
    const Channels& shape = grads.shape;
    const std::int64_t channel = (i / shape.l) % shape.c;
    double mean, invstd;
    grads.stats(channel, &mean, &invstd);
    double g = load(input_of<T>(call.grad_out)[i]);
    if (call.training) {
      const double count = static_cast<double>(shape.count());
      const double xhat = (load(input_of<T>(call.input)[i]) - mean) * invstd;
      g = g - channels[channel].v[0] / count -
          xhat * channels[channel].v[1] / count;
    }
    output_of<T>(call.grad_input)[i] =
        store<T>(g * value_or<T>(call.weight, channel, 1) * invstd);
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
        torch_backend::KernelWorkspace workspace(
            ctx, static_cast<std::size_t>(shape.c) * sizeof(Sums<2>));
        auto* sums = static_cast<Sums<2>*>(workspace.get());
        status = sum_items<2>(
            ctx, shape.c, shape.count(),
            ChannelMomentItems<T>{input_of<T>(call.input), shape}, sums);
        if (status == kSuccess) {
          status =
              launch_each(ctx, shape.c, BatchStatsFn<T>{call, shape, sums});
        }
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
      const BatchGradItems<T> grads{call, channels_of(call.input)};
      const Channels& shape = grads.shape;
      torch_backend::KernelWorkspace workspace(
          ctx, static_cast<std::size_t>(shape.c) * sizeof(Sums<2>));
      auto* sums = static_cast<Sums<2>*>(workspace.get());
      const bool params =
          call.grad_weight.data != nullptr || call.grad_bias.data != nullptr;
      Status status = kSuccess;
      if (params || (call.training && call.grad_input.data != nullptr)) {
        status = sum_items<2>(ctx, shape.c, shape.count(), grads, sums);
      }
      if (status == kSuccess && call.grad_input.data != nullptr) {
        status = launch_each(ctx, shape.n * shape.c * shape.l,
                             BatchInputGradFn<T>{grads, sums});
      }
      if (status == kSuccess && params) {
        status =
            launch_each(ctx, shape.c,
                        ParamGradFn<T>{call.grad_weight, call.grad_bias, sums});
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
