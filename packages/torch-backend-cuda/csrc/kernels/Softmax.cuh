// softmax and log_softmax along one dimension, forward and backward: one
// thread per row (every index but the dimension's), three passes over it,
// in float for half and bfloat16.
#pragma once

#include "Portable.cuh"

namespace gpu {

template <typename T, bool Log>
struct SoftmaxFn {
  Rows<2> rows;  // out, in
  T* out;
  const T* in;

  GPU_HD void operator()(std::int64_t row) const {
    using C = Compute<T>;
    std::int64_t at[2];
    rows.map.offsets(row, at);
    const std::int64_t n = rows.length;
    C peak = lowest<C>();
    for (std::int64_t j = 0; j < n; ++j) {
      const C x = load(in[at[1] + j * rows.step[1]]);
      peak = (x > peak || is_nan(x)) ? x : peak;
    }
    C total = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      total += exp_of(load(in[at[1] + j * rows.step[1]]) - peak);
    }
    const C log_total = log_of(total);
    for (std::int64_t j = 0; j < n; ++j) {
      const C shifted = load(in[at[1] + j * rows.step[1]]) - peak;
      out[at[0] + j * rows.step[0]] =
          store<T>(Log ? shifted - log_total : exp_of(shifted) / total);
    }
  }
};

// softmax: grad_in = y * (g - sum(g * y)); log_softmax: grad_in = g -
// exp(y) * sum(g).
template <typename T, bool Log>
struct SoftmaxBackwardFn {
  Rows<3> rows;  // grad_input, grad_output, output
  T* grad_input;
  const T* grad_output;
  const T* output;

  GPU_HD void operator()(std::int64_t row) const {
    using C = Compute<T>;
    std::int64_t at[3];
    rows.map.offsets(row, at);
    const std::int64_t n = rows.length;
    C total = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const C g = load(grad_output[at[1] + j * rows.step[1]]);
      total += Log ? g : g * load(output[at[2] + j * rows.step[2]]);
    }
    for (std::int64_t j = 0; j < n; ++j) {
      const C g = load(grad_output[at[1] + j * rows.step[1]]);
      const C y = load(output[at[2] + j * rows.step[2]]);
      grad_input[at[0] + j * rows.step[0]] =
          store<T>(Log ? g - exp_of(y) * total : y * (g - total));
    }
  }
};

template <bool Log>
struct SoftmaxJob {
  template <typename T>
  struct Job {
    static Status run(const KernelContext& ctx, const TensorView& out,
                      const TensorView& in, std::int32_t dim) {
      if constexpr (!is_floating<T>) {
        return kNotSupported;
      } else {
        const TensorView* views[2] = {&out, &in};
        const SoftmaxFn<T, Log> fn{Rows<2>(views, dim), data_of<T>(out),
                                   data_of<const T>(in)};
        return launch_each(ctx, fn.rows.count(), fn);
      }
    }
  };
  template <typename T>
  struct Backward {
    static Status run(const KernelContext& ctx, const TensorView& grad_input,
                      const TensorView& grad_output, const TensorView& output,
                      std::int32_t dim) {
      if constexpr (!is_floating<T>) {
        return kNotSupported;
      } else {
        const TensorView* views[3] = {&grad_input, &grad_output, &output};
        const SoftmaxBackwardFn<T, Log> fn{
            Rows<3>(views, dim), data_of<T>(grad_input),
            data_of<const T>(grad_output), data_of<const T>(output)};
        return launch_each(ctx, fn.rows.count(), fn);
      }
    }
  };
};

template <bool Log>
Status softmax(const KernelContext& ctx, const TensorView& out,
               const TensorView& in, std::int32_t dim) {
  return dispatch<SoftmaxJob<Log>::template Job>(out.dtype, ctx, out, in, dim);
}
template <bool Log>
Status softmax_backward(const KernelContext& ctx, const TensorView& grad_input,
                        const TensorView& grad_output, const TensorView& output,
                        std::int32_t dim) {
  return dispatch<SoftmaxJob<Log>::template Backward>(
      grad_input.dtype, ctx, grad_input, grad_output, output, dim);
}

inline void register_softmax(torch_backend::KernelRegistry& kernels) {
  kernels.softmax("softmax", &softmax<false>, &softmax_backward<false>);
  kernels.softmax("log_softmax", &softmax<true>, &softmax_backward<true>);
}

}  // namespace gpu
