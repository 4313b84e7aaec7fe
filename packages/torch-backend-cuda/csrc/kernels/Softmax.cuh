// softmax and log_softmax along one dimension, forward and backward, in float
// for half and bfloat16. Each pass over a row is written for `lanes` threads
// sharing it, lane k taking elements k, k + lanes, ...: short rows take one
// thread each (lanes = 1), long ones (a language model's vocabulary) a block
// each, whose threads combine their parts in shared memory between passes.
#pragma once

#include "Portable.cuh"

namespace gpu {

// Rows at least this long take a block each.
constexpr std::int64_t kBlockPerRowFrom = 1024;

template <typename C>
GPU_HD C max_with_nan(C a, C b) {
  return (b > a || is_nan(b)) ? b : a;
}

// Forward: the row's maximum, the sum of exp(x - maximum), then the outputs.
template <typename T, bool Log>
struct SoftmaxParts {
  using C = Compute<T>;
  Rows<2> rows;  // out, in
  T* out;
  const T* in;

  GPU_HD C peak(std::int64_t row, std::int64_t lane, std::int64_t lanes) const {
    std::int64_t at[2];
    rows.map.offsets(row, at);
    C peak = lowest<C>();
    for (std::int64_t j = lane; j < rows.length; j += lanes) {
      peak = max_with_nan(peak, load(in[at[1] + j * rows.step[1]]));
    }
    return peak;
  }
  GPU_HD C total(std::int64_t row, std::int64_t lane, std::int64_t lanes,
                 C peak) const {
    std::int64_t at[2];
    rows.map.offsets(row, at);
    C total = 0;
    for (std::int64_t j = lane; j < rows.length; j += lanes) {
      total += exp_of(load(in[at[1] + j * rows.step[1]]) - peak);
    }
    return total;
  }
  GPU_HD void write(std::int64_t row, std::int64_t lane, std::int64_t lanes,
                    C peak, C total) const {
    std::int64_t at[2];
    rows.map.offsets(row, at);
    const C log_total = log_of(total);
    for (std::int64_t j = lane; j < rows.length; j += lanes) {
      const C shifted = load(in[at[1] + j * rows.step[1]]) - peak;
      out[at[0] + j * rows.step[0]] =
          store<T>(Log ? shifted - log_total : exp_of(shifted) / total);
    }
  }
  // A row by one thread.
  GPU_HD void operator()(std::int64_t row) const {
    const C top = peak(row, 0, 1);
    write(row, 0, 1, top, total(row, 0, 1, top));
  }
};

// Backward. softmax: grad_in = y * (g - sum(g * y)); log_softmax: grad_in =
// g - exp(y) * sum(g).
template <typename T, bool Log>
struct SoftmaxBackwardParts {
  using C = Compute<T>;
  Rows<3> rows;  // grad_input, grad_output, output
  T* grad_input;
  const T* grad_output;
  const T* output;

  GPU_HD C peak(std::int64_t, std::int64_t, std::int64_t) const { return 0; }
  GPU_HD C total(std::int64_t row, std::int64_t lane, std::int64_t lanes,
                 C) const {
    std::int64_t at[3];
    rows.map.offsets(row, at);
    C total = 0;
    for (std::int64_t j = lane; j < rows.length; j += lanes) {
      const C g = load(grad_output[at[1] + j * rows.step[1]]);
      total += Log ? g : g * load(output[at[2] + j * rows.step[2]]);
    }
    return total;
  }
  GPU_HD void write(std::int64_t row, std::int64_t lane, std::int64_t lanes, C,
                    C total) const {
    std::int64_t at[3];
    rows.map.offsets(row, at);
    for (std::int64_t j = lane; j < rows.length; j += lanes) {
      const C g = load(grad_output[at[1] + j * rows.step[1]]);
      const C y = load(output[at[2] + j * rows.step[2]]);
      grad_input[at[0] + j * rows.step[0]] =
          store<T>(Log ? g - exp_of(y) * total : y * (g - total));
    }
  }
  GPU_HD void operator()(std::int64_t row) const {
    write(row, 0, 1, 0, total(row, 0, 1, 0));
  }
};

#if defined(__CUDACC__)
// Block b runs row b: each pass's parts combined in shared memory (a tree)
// and the result shared with every thread before the next pass.
template <typename Parts>
__global__ void softmax_row_kernel(Parts parts) {
  using C = typename Parts::C;
  __shared__ C shared[kThreads];
  const std::int64_t row = blockIdx.x;
  const unsigned lane = threadIdx.x, lanes = blockDim.x;
  shared[lane] = parts.peak(row, lane, lanes);
  combine_in_block(shared, [](C a, C b) { return max_with_nan(a, b); });
  const C peak = shared[0];
  __syncthreads();  // every thread has read the peak before shared is reused
  shared[lane] = parts.total(row, lane, lanes, peak);
  combine_in_block(shared, [](C a, C b) { return a + b; });
  parts.write(row, lane, lanes, peak, shared[0]);
}
#endif

// Every row of `parts`: a thread each, or a block each for long rows (on the
// host, a block's threads one after another, pass by pass).
template <typename Parts>
Status launch_rows(const KernelContext& ctx, std::int64_t count,
                   std::int64_t length, const Parts& parts) {
  if (length < kBlockPerRowFrom || count <= 0) {
    return launch_each(ctx, count, parts);
  }
#if defined(__CUDACC__)
  softmax_row_kernel<<<static_cast<unsigned>(count), kThreads, 0,
                       static_cast<cudaStream_t>(ctx.stream)>>>(parts);
  return last_launch_status();
#else
  (void)ctx;
  using C = typename Parts::C;
  for (std::int64_t row = 0; row < count; ++row) {
    C peak = lowest<C>(), total = 0;
    for (std::int64_t lane = 0; lane < kThreads; ++lane) {
      peak = max_with_nan(peak, parts.peak(row, lane, kThreads));
    }
    for (std::int64_t lane = 0; lane < kThreads; ++lane) {
      total += parts.total(row, lane, kThreads, peak);
    }
    for (std::int64_t lane = 0; lane < kThreads; ++lane) {
      parts.write(row, lane, kThreads, peak, total);
    }
  }
  return kSuccess;
#endif
}

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
        const SoftmaxParts<T, Log> parts{Rows<2>(views, dim), data_of<T>(out),
                                         data_of<const T>(in)};
        return launch_rows(ctx, parts.rows.count(), parts.rows.length, parts);
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
        const SoftmaxBackwardParts<T, Log> parts{
            Rows<3>(views, dim), data_of<T>(grad_input),
            data_of<const T>(grad_output), data_of<const T>(output)};
        return launch_rows(ctx, parts.rows.count(), parts.rows.length, parts);
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
