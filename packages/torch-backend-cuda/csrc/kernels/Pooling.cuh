// 2-d pooling over (N, C, H, W) views, contiguous or channels-last: max with
// indices, average and adaptive average, forward and backward. cuDNN's max
// pooling returns no indices (PyTorch's CUDA backend does not use it either),
// so these are kernels of our own: one thread per output element forward,
// one per input element backward, which gathers from the windows that cover
// it (no atomics, no zeroing pass, the same sum order on every run).
#pragma once

#include "Portable.cuh"

namespace gpu {

using torch_backend::Pool2dParams;
using torch_backend::PoolBackwardCall;
using torch_backend::PoolCall;

// (n, c, y, x) of linear index i over a (N, C, Y, X) view, and its element
// offset. Channels-last views take c fastest, so neighbouring threads touch
// neighbouring memory.
struct Plane4 {
  std::int64_t sizes[4] = {};
  std::int64_t strides[4] = {};
  std::int64_t offset = 0;
  bool channels_last = false;

  explicit Plane4(const TensorView& view) : offset(view.offset) {
    for (int d = 0; d < 4; ++d) {
      sizes[d] = view.sizes[d];
      strides[d] = view.strides[d];
    }
    channels_last = strides[1] == 1 && sizes[1] > 1;
  }
  std::int64_t count() const {
    return sizes[0] * sizes[1] * sizes[2] * sizes[3];
  }
  GPU_HD void position(std::int64_t i, std::int64_t* at) const {
    if (channels_last) {  // (n, y, x, c), c fastest
      at[1] = i % sizes[1];
      i /= sizes[1];
      at[3] = i % sizes[3];
      i /= sizes[3];
      at[2] = i % sizes[2];
      at[0] = i / sizes[2];
    } else {  // (n, c, y, x), x fastest
      at[3] = i % sizes[3];
      i /= sizes[3];
      at[2] = i % sizes[2];
      i /= sizes[2];
      at[1] = i % sizes[1];
      at[0] = i / sizes[1];
    }
  }
  GPU_HD std::int64_t element(std::int64_t n, std::int64_t c, std::int64_t y,
                              std::int64_t x) const {
    return offset + n * strides[0] + c * strides[1] + y * strides[2] +
           x * strides[3];
  }
};

GPU_HD std::int64_t min_of(std::int64_t a, std::int64_t b) {
  return a < b ? a : b;
}
GPU_HD std::int64_t max_of(std::int64_t a, std::int64_t b) {
  return a > b ? a : b;
}

// Output rows whose window (start o * stride - pad, `extent` rows) covers
// input row y: [first, last).
GPU_HD void covering(std::int64_t y, std::int64_t pad, std::int64_t extent,
                     std::int64_t stride, std::int64_t outputs,
                     std::int64_t* first, std::int64_t* last) {
  *first = y + pad < extent ? 0 : (y + pad - extent) / stride + 1;
  *last = min_of((y + pad) / stride + 1, outputs);
}

// What a forward kernel reads and writes: one thread per element of `out`.
template <typename T>
struct PoolForward {
  Plane4 out, in;
  T* out_data;
  const T* in_data;

  explicit PoolForward(const PoolCall& call)
      : out(call.out),
        in(call.input),
        out_data(data_of<T>(call.out)),
        in_data(data_of<const T>(call.input)) {}
};

// What a backward kernel reads and writes: one thread per element of
// `grad_in`, gathering from the outputs whose windows cover it.
template <typename T>
struct PoolBackward {
  Plane4 grad_in, grad_out;
  T* grad_in_data;
  const T* grad_out_data;

  explicit PoolBackward(const PoolBackwardCall& call)
      : grad_in(call.grad_input),
        grad_out(call.grad_out),
        grad_in_data(data_of<T>(call.grad_input)),
        grad_out_data(data_of<const T>(call.grad_out)) {}
};

// ---- max pooling --------------------------------------------------------

template <typename T>
struct MaxPoolFn {
  PoolForward<T> io;
  Plane4 indices;
  std::int64_t* index_data;
  Pool2dParams p;

  GPU_HD void operator()(std::int64_t i) const {
    using C = Compute<T>;
    std::int64_t at[4];
    io.out.position(i, at);
    const std::int64_t n = at[0], c = at[1], H = io.in.sizes[2],
                       W = io.in.sizes[3];
    std::int64_t y0 = at[2] * p.stride[0] - p.padding[0];
    std::int64_t x0 = at[3] * p.stride[1] - p.padding[1];
    while (y0 < 0) {  // the first row and column inside the input
      y0 += p.dilation[0];
    }
    while (x0 < 0) {
      x0 += p.dilation[1];
    }
    const std::int64_t y_end = min_of(at[2] * p.stride[0] - p.padding[0] +
                                          (p.kernel[0] - 1) * p.dilation[0] + 1,
                                      H);
    const std::int64_t x_end = min_of(at[3] * p.stride[1] - p.padding[1] +
                                          (p.kernel[1] - 1) * p.dilation[1] + 1,
                                      W);
    // As PyTorch: a larger value or any NaN replaces the maximum, so the
    // first of equal values is kept and the last NaN wins.
    C best = lowest<C>();
    std::int64_t best_index = y0 * W + x0;
    for (std::int64_t y = y0; y < y_end; y += p.dilation[0]) {
      for (std::int64_t x = x0; x < x_end; x += p.dilation[1]) {
        const C value = load(io.in_data[io.in.element(n, c, y, x)]);
        if (value > best || is_nan(value)) {
          best = value;
          best_index = y * W + x;
        }
      }
    }
    io.out_data[io.out.element(n, c, at[2], at[3])] = store<T>(best);
    index_data[indices.element(n, c, at[2], at[3])] = best_index;
  }
};

template <typename T>
struct MaxPoolBackwardFn {
  PoolBackward<T> io;
  Plane4 indices;
  const std::int64_t* index_data;
  Pool2dParams p;

  GPU_HD void operator()(std::int64_t i) const {
    using C = Compute<T>;
    std::int64_t at[4];
    io.grad_in.position(i, at);
    const std::int64_t n = at[0], c = at[1], y = at[2], x = at[3];
    const std::int64_t here = y * io.grad_in.sizes[3] + x;
    std::int64_t oy0, oy1, ox0, ox1;
    covering(y, p.padding[0], (p.kernel[0] - 1) * p.dilation[0] + 1,
             p.stride[0], io.grad_out.sizes[2], &oy0, &oy1);
    covering(x, p.padding[1], (p.kernel[1] - 1) * p.dilation[1] + 1,
             p.stride[1], io.grad_out.sizes[3], &ox0, &ox1);
    C total = 0;
    for (std::int64_t oy = oy0; oy < oy1; ++oy) {
      for (std::int64_t ox = ox0; ox < ox1; ++ox) {
        if (index_data[indices.element(n, c, oy, ox)] == here) {
          total += load(io.grad_out_data[io.grad_out.element(n, c, oy, ox)]);
        }
      }
    }
    io.grad_in_data[io.grad_in.element(n, c, y, x)] = store<T>(total);
  }
};

// ---- average pooling ------------------------------------------------------

// The window of output (oy, ox) clipped to the input, and what its sum is
// divided by (PyTorch's avg_pool2d rules).
struct AverageWindow {
  std::int64_t y0, y1, x0, x1, divisor;

  GPU_HD AverageWindow(const Pool2dParams& p, std::int64_t oy, std::int64_t ox,
                       std::int64_t H, std::int64_t W) {
    y0 = oy * p.stride[0] - p.padding[0];
    x0 = ox * p.stride[1] - p.padding[1];
    y1 = min_of(y0 + p.kernel[0], H + p.padding[0]);
    x1 = min_of(x0 + p.kernel[1], W + p.padding[1]);
    const std::int64_t padded = (y1 - y0) * (x1 - x0);
    y0 = max_of(y0, 0);
    x0 = max_of(x0, 0);
    y1 = min_of(y1, H);
    x1 = min_of(x1, W);
    divisor = p.divisor_override != 0 ? p.divisor_override
              : p.count_include_pad   ? padded
                                      : (y1 - y0) * (x1 - x0);
  }
  GPU_HD bool empty() const { return y0 >= y1 || x0 >= x1; }
};

template <typename T>
struct AvgPoolFn {
  PoolForward<T> io;
  Pool2dParams p;

  GPU_HD void operator()(std::int64_t i) const {
    using C = Compute<T>;
    std::int64_t at[4];
    io.out.position(i, at);
    const AverageWindow window(p, at[2], at[3], io.in.sizes[2], io.in.sizes[3]);
    C total = 0;
    for (std::int64_t y = window.y0; y < window.y1; ++y) {
      for (std::int64_t x = window.x0; x < window.x1; ++x) {
        total += load(io.in_data[io.in.element(at[0], at[1], y, x)]);
      }
    }
    io.out_data[io.out.element(at[0], at[1], at[2], at[3])] = store<T>(
        window.empty() ? C(0) : total / static_cast<C>(window.divisor));
  }
};

template <typename T>
struct AvgPoolBackwardFn {
  PoolBackward<T> io;
  Pool2dParams p;

  GPU_HD void operator()(std::int64_t i) const {
    using C = Compute<T>;
    std::int64_t at[4];
    io.grad_in.position(i, at);
    const std::int64_t y = at[2], x = at[3], H = io.grad_in.sizes[2],
                       W = io.grad_in.sizes[3];
    std::int64_t oy0, oy1, ox0, ox1;
    covering(y, p.padding[0], p.kernel[0], p.stride[0], io.grad_out.sizes[2],
             &oy0, &oy1);
    covering(x, p.padding[1], p.kernel[1], p.stride[1], io.grad_out.sizes[3],
             &ox0, &ox1);
    C total = 0;
    for (std::int64_t oy = oy0; oy < oy1; ++oy) {
      for (std::int64_t ox = ox0; ox < ox1; ++ox) {
        const AverageWindow window(p, oy, ox, H, W);
        if (y >= window.y0 && y < window.y1 && x >= window.x0 &&
            x < window.x1) {
          total +=
              load(
                  io.grad_out_data[io.grad_out.element(at[0], at[1], oy, ox)]) /
              static_cast<C>(window.divisor);
        }
      }
    }
    io.grad_in_data[io.grad_in.element(at[0], at[1], y, x)] = store<T>(total);
  }
};

// ---- adaptive average pooling ---------------------------------------------

// Output o of `outputs` covers inputs [o * inputs / outputs rounded down,
// (o + 1) * inputs / outputs rounded up).
GPU_HD std::int64_t adaptive_start(std::int64_t o, std::int64_t inputs,
                                   std::int64_t outputs) {
  return (o * inputs) / outputs;
}
GPU_HD std::int64_t adaptive_end(std::int64_t o, std::int64_t inputs,
                                 std::int64_t outputs) {
  return ((o + 1) * inputs + outputs - 1) / outputs;
}

template <typename T>
struct AdaptiveAvgPoolFn {
  PoolForward<T> io;

  GPU_HD void operator()(std::int64_t i) const {
    using C = Compute<T>;
    std::int64_t at[4];
    io.out.position(i, at);
    const std::int64_t H = io.in.sizes[2], W = io.in.sizes[3],
                       OH = io.out.sizes[2], OW = io.out.sizes[3];
    const std::int64_t y0 = adaptive_start(at[2], H, OH),
                       y1 = adaptive_end(at[2], H, OH);
    const std::int64_t x0 = adaptive_start(at[3], W, OW),
                       x1 = adaptive_end(at[3], W, OW);
    C total = 0;
    for (std::int64_t y = y0; y < y1; ++y) {
      for (std::int64_t x = x0; x < x1; ++x) {
        total += load(io.in_data[io.in.element(at[0], at[1], y, x)]);
      }
    }
    io.out_data[io.out.element(at[0], at[1], at[2], at[3])] =
        store<T>(total / static_cast<C>((y1 - y0) * (x1 - x0)));
  }
};

template <typename T>
struct AdaptiveAvgPoolBackwardFn {
  PoolBackward<T> io;

  GPU_HD void operator()(std::int64_t i) const {
    using C = Compute<T>;
    std::int64_t at[4];
    io.grad_in.position(i, at);
    const std::int64_t y = at[2], x = at[3], H = io.grad_in.sizes[2],
                       W = io.grad_in.sizes[3], OH = io.grad_out.sizes[2],
                       OW = io.grad_out.sizes[3];
    // The outputs whose windows can hold y (and x), checked one by one.
    const std::int64_t oy0 = adaptive_start(y, OH, H),
                       oy1 = min_of(adaptive_end(y, OH, H) + 1, OH);
    const std::int64_t ox0 = adaptive_start(x, OW, W),
                       ox1 = min_of(adaptive_end(x, OW, W) + 1, OW);
    C total = 0;
    for (std::int64_t oy = max_of(oy0 - 1, 0); oy < oy1; ++oy) {
      const std::int64_t y0 = adaptive_start(oy, H, OH),
                         y1 = adaptive_end(oy, H, OH);
      if (y < y0 || y >= y1) {
        continue;
      }
      for (std::int64_t ox = max_of(ox0 - 1, 0); ox < ox1; ++ox) {
        const std::int64_t x0 = adaptive_start(ox, W, OW),
                           x1 = adaptive_end(ox, W, OW);
        if (x >= x0 && x < x1) {
          total +=
              load(
                  io.grad_out_data[io.grad_out.element(at[0], at[1], oy, ox)]) /
              static_cast<C>((y1 - y0) * (x1 - x0));
        }
      }
    }
    io.grad_in_data[io.grad_in.element(at[0], at[1], y, x)] = store<T>(total);
  }
};

// ---- dispatch -------------------------------------------------------------

template <typename T>
struct PoolJob {
  static Status max(const KernelContext& ctx, const PoolCall& call) {
    const MaxPoolFn<T> fn{PoolForward<T>(call), Plane4(call.indices),
                          data_of<std::int64_t>(call.indices), call.params};
    return launch_each(ctx, fn.io.out.count(), fn);
  }
  static Status max_backward(const KernelContext& ctx,
                             const PoolBackwardCall& call) {
    const MaxPoolBackwardFn<T> fn{PoolBackward<T>(call), Plane4(call.indices),
                                  data_of<const std::int64_t>(call.indices),
                                  call.params};
    return launch_each(ctx, fn.io.grad_in.count(), fn);
  }
  static Status avg(const KernelContext& ctx, const PoolCall& call) {
    const AvgPoolFn<T> fn{PoolForward<T>(call), call.params};
    return launch_each(ctx, fn.io.out.count(), fn);
  }
  static Status avg_backward(const KernelContext& ctx,
                             const PoolBackwardCall& call) {
    const AvgPoolBackwardFn<T> fn{PoolBackward<T>(call), call.params};
    return launch_each(ctx, fn.io.grad_in.count(), fn);
  }
  static Status adaptive(const KernelContext& ctx, const PoolCall& call) {
    const AdaptiveAvgPoolFn<T> fn{PoolForward<T>(call)};
    return launch_each(ctx, fn.io.out.count(), fn);
  }
  static Status adaptive_backward(const KernelContext& ctx,
                                  const PoolBackwardCall& call) {
    const AdaptiveAvgPoolBackwardFn<T> fn{PoolBackward<T>(call)};
    return launch_each(ctx, fn.io.grad_in.count(), fn);
  }
};

// Floating dtypes only (core sends no others): entries for Float32,
// Float64, Float16 and BFloat16.
template <typename Call>
using PoolEntry = Status (*)(const KernelContext&, const Call&);

template <typename Call>
Status pool_dispatch(DType dtype, const PoolEntry<Call> (&entries)[4],
                     const KernelContext& ctx, const Call& call) {
  switch (dtype) {
    case DType::Float32:
      return entries[0](ctx, call);
    case DType::Float64:
      return entries[1](ctx, call);
    case DType::Float16:
      return entries[2](ctx, call);
    case DType::BFloat16:
      return entries[3](ctx, call);
    default:
      return kNotSupported;
  }
}

#define GPU_POOL_KERNEL(name, Call, view)                                      \
  inline Status name(const KernelContext& ctx, const Call& call) {             \
    static constexpr PoolEntry<Call> entries[4] = {                            \
        &PoolJob<float>::name, &PoolJob<double>::name, &PoolJob<__half>::name, \
        &PoolJob<__nv_bfloat16>::name};                                        \
    return pool_dispatch(call.view.dtype, entries, ctx, call);                 \
  }

namespace pooling {
GPU_POOL_KERNEL(max, PoolCall, input)
GPU_POOL_KERNEL(max_backward, PoolBackwardCall, grad_out)
GPU_POOL_KERNEL(avg, PoolCall, input)
GPU_POOL_KERNEL(avg_backward, PoolBackwardCall, grad_out)
GPU_POOL_KERNEL(adaptive, PoolCall, input)
GPU_POOL_KERNEL(adaptive_backward, PoolBackwardCall, grad_out)
}  // namespace pooling

#undef GPU_POOL_KERNEL

inline void register_pooling(torch_backend::KernelRegistry& kernels) {
  kernels.pooling("max_pool2d", &pooling::max, &pooling::max_backward);
  kernels.pooling("avg_pool2d", &pooling::avg, &pooling::avg_backward);
  kernels.pooling("adaptive_avg_pool2d", &pooling::adaptive,
                  &pooling::adaptive_backward);
}

}  // namespace gpu
