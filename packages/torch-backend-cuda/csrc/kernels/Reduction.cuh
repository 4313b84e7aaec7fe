// The reduction family (sum, mean, amax, amin): out has stride 0 along the
// reduced dimensions (DeviceKernels.h). Few long reductions (a full sum)
// split each output over several blocks, which combine in a second pass;
// many outputs take one thread each.
#pragma once

#include "Portable.cuh"

namespace gpu {

// Accumulator types: double for every floating type in sums (one thread may
// fold thousands of elements in order; float would drift by n * eps, beyond
// PyTorch's tolerances, and reductions are memory-bound), int64 for
// integers; the compute type for extremes.
template <typename T>
using SumAcc = std::conditional_t<std::is_floating_point_v<Compute<T>>, double,
                                  std::int64_t>;

// Part: what a thread folds one group of vector loads in (16 floats, 32
// halves) before the group joins its running Acc (fold_lane). For float,
// half and bfloat16 that is float: a group folded pairwise in float is off by
// a few ulps, and the double accumulators still hold the long sums. Converting
// every element to double instead runs at the conversion rate (16 results a
// clock per SM on sm_80 and sm_90, an eighth of the float add rate): for a
// 64M-element sum on an H200 about 15 us of the 70 its memory takes.
template <typename T>
struct SumOp {
  using Acc = SumAcc<T>;
  using Part =
      std::conditional_t<std::is_floating_point_v<Compute<T>>, Compute<T>, Acc>;
  GPU_HD static Acc init() { return Acc(0); }
  template <typename A>
  GPU_HD static A combine(A a, A b) {
    return a + b;
  }
  GPU_HD static Acc finish(Acc a, std::int64_t) { return a; }
};
template <typename T>
struct MeanOp : SumOp<T> {
  using Acc = SumAcc<T>;
  GPU_HD static Acc finish(Acc a, std::int64_t count) {
    return a / static_cast<Acc>(count);
  }
};
template <typename T, bool Max>
struct ExtremeOp {
  using Acc = Compute<T>;
  using Part = Acc;
  GPU_HD static Acc init() { return Max ? lowest<Acc>() : highest<Acc>(); }
  GPU_HD static Acc combine(Acc a, Acc b) {  // NaN wins
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return (Max ? a > b : a < b) ? a : b;
  }
  GPU_HD static Acc finish(Acc a, std::int64_t) { return a; }
};
template <typename T>
using MaxOp = ExtremeOp<T, true>;
template <typename T>
using MinOp = ExtremeOp<T, false>;

// Kept dimensions map an output index to (out offset, in offset); reduced
// ones map a folded index to an in offset (base 0).
struct ReducePlan {
  IndexMap<2> kept;
  IndexMap<1> folded;
  std::int64_t outputs = 1;
  std::int64_t reduced = 1;
};

// The dimensions `out` keeps and those it folds (stride 0, size > 1).
struct DimSplit {
  std::int32_t kept[kMaxKernelDims], folded[kMaxKernelDims];
  std::int32_t kept_count = 0, folded_count = 0;
};
inline DimSplit split_dims(const TensorView& out) {
  DimSplit split;
  for (std::int32_t d = 0; d < out.dim; ++d) {
    if (out.strides[d] == 0 && out.sizes[d] > 1) {
      split.folded[split.folded_count++] = d;
    } else {
      split.kept[split.kept_count++] = d;
    }
  }
  return split;
}

inline ReducePlan plan_reduction(const TensorView& out, const TensorView& in) {
  const DimSplit split = split_dims(out);
  ReducePlan plan;
  const TensorView* pair[2] = {&out, &in};
  const TensorView* input[1] = {&in};
  plan.kept = map_selected(pair, split.kept, split.kept_count, true, /*by=*/1);
  plan.folded = map_selected(input, split.folded, split.folded_count);
  plan.folded.base[0] = 0;
  plan.outputs = plan.kept.count();
  plan.reduced = plan.folded.count();
  return plan;
}

// Folds in[begin + k * step] for begin + k * step < end, of output o.
template <typename T, typename Op>
struct ReduceSource {
  ReducePlan plan;
  const T* in;

  GPU_HD typename Op::Acc fold(std::int64_t o, std::int64_t begin,
                               std::int64_t end, std::int64_t step) const {
    std::int64_t at[2];
    plan.kept.offsets(o, at);
    if (plan.folded.dims == 1) {
      // One folded dimension (a full or a last-dimension reduction): four
      // independent accumulators keep four loads in flight per thread.
      const T* base = in + at[1];
      const std::int64_t stride = plan.folded.strides[0][0];
      using Acc = typename Op::Acc;
      Acc a0 = Op::init(), a1 = Op::init(), a2 = Op::init(), a3 = Op::init();
      std::int64_t r = begin;
      for (; r + 3 * step < end; r += 4 * step) {
        a0 = Op::combine(a0, static_cast<Acc>(load(base[r * stride])));
        a1 = Op::combine(a1, static_cast<Acc>(load(base[(r + step) * stride])));
        a2 = Op::combine(a2,
                         static_cast<Acc>(load(base[(r + 2 * step) * stride])));
        a3 = Op::combine(a3,
                         static_cast<Acc>(load(base[(r + 3 * step) * stride])));
      }
      for (; r < end; r += step) {
        a0 = Op::combine(a0, static_cast<Acc>(load(base[r * stride])));
      }
      return Op::combine(Op::combine(a0, a1), Op::combine(a2, a3));
    }
    auto acc = Op::init();
    for (std::int64_t r = begin; r < end; r += step) {
      std::int64_t f[1];
      plan.folded.offsets(r, f);
      acc = Op::combine(acc,
                        static_cast<typename Op::Acc>(load(in[at[1] + f[0]])));
    }
    return acc;
  }
};

// One vector's elements folded pairwise in Op::Part (N is a power of two).
template <typename Op, typename T, int N>
GPU_HD typename Op::Part fold_packed(const Packed<T, N>& x) {
  using Part = typename Op::Part;
  Part v[N];
  for (int j = 0; j < N; ++j) {
    v[j] = static_cast<Part>(load(x.v[j]));
  }
  for (int width = N / 2; width > 0; width /= 2) {
    for (int j = 0; j < width; ++j) {
      v[j] = Op::combine(v[j], v[j + width]);
    }
  }
  return v[0];
}

// Lane `lane` of `lanes` folding in[begin, end) of output o. Where the
// folded dimension is contiguous and aligned, a lane reads kVector
// consecutive elements per load (16 bytes for float, as CUDA's reductions
// read), elements begin + (lane + k * lanes) * kVector + j; else it folds
// begin + lane + k * lanes. Either way the lanes together fold the range once.
template <typename T, typename Op>
GPU_HD typename Op::Acc fold_lane(const ReduceSource<T, Op>& source,
                                  std::int64_t o, std::int64_t begin,
                                  std::int64_t end, std::int64_t lane,
                                  std::int64_t lanes) {
  constexpr int kVector =
      sizeof(T) >= 16 ? 1 : 16 / static_cast<int>(sizeof(T));
  const ReducePlan& plan = source.plan;
  if (kVector > 1 && plan.folded.dims == 1 && plan.folded.strides[0][0] == 1) {
    std::int64_t at[2];
    plan.kept.offsets(o, at);
    const T* base = source.in + at[1] + begin;
    if (reinterpret_cast<std::uintptr_t>(base) % 16 == 0) {
      using Acc = typename Op::Acc;
      const std::int64_t n = end > begin ? end - begin : 0;
      const std::int64_t vectors = n / kVector;
      const auto* packed = reinterpret_cast<const Packed<T, kVector>*>(base);
      // Four loads issued before any is folded: one 16-byte load in flight
      // per thread leaves memory bandwidth unused. The four vectors fold
      // pairwise in Op::Part, which joins the running Acc once per group.
      Acc acc = Op::init();
      std::int64_t v = lane;
      for (; v + 3 * lanes < vectors; v += 4 * lanes) {
        Packed<T, kVector> x[4];
        for (int k = 0; k < 4; ++k) {
          x[k] = packed[v + k * lanes];
        }
        const auto group = Op::combine(
            Op::combine(fold_packed<Op>(x[0]), fold_packed<Op>(x[1])),
            Op::combine(fold_packed<Op>(x[2]), fold_packed<Op>(x[3])));
        acc = Op::combine(acc, static_cast<Acc>(group));
      }
      for (; v < vectors; v += lanes) {
        acc = Op::combine(acc, static_cast<Acc>(fold_packed<Op>(packed[v])));
      }
      for (std::int64_t i = vectors * kVector + lane; i < n; i += lanes) {
        acc = Op::combine(acc, static_cast<Acc>(load(base[i])));
      }
      return acc;
    }
  }
  return source.fold(o, begin + lane, end, lanes);
}

// One thread per output, folding everything (partials == nullptr), or
// combining the output's `splits` partial results.
template <typename T, typename Op>
struct ReduceFinishFn {
  ReduceSource<T, Op> source;
  T* out;
  const typename Op::Acc* partials;
  std::int64_t splits;

  GPU_HD void operator()(std::int64_t o) const {
    typename Op::Acc acc;
    if (partials == nullptr) {
      acc = source.fold(o, 0, source.plan.reduced, 1);
    } else {
      acc = Op::init();
      for (std::int64_t s = 0; s < splits; ++s) {
        acc = Op::combine(acc, partials[o * splits + s]);
      }
    }
    write(o, acc);
  }

  GPU_HD void write(std::int64_t o, typename Op::Acc acc) const {
    std::int64_t at[2];
    source.plan.kept.offsets(o, at);
    out[at[0]] = store<T>(Op::finish(acc, source.plan.reduced));
  }
};

#if defined(__CUDACC__)
// Block o combines output o's partial results: a thousand partials read one
// after another by a single thread cost as much as the first pass over 64M
// elements.
template <typename T, typename Op>
__global__ void reduce_finish_kernel(ReduceFinishFn<T, Op> finish) {
  __shared__ typename Op::Acc shared[kThreads];
  const std::int64_t o = blockIdx.x;
  auto acc = Op::init();
  for (std::int64_t s = threadIdx.x; s < finish.splits; s += blockDim.x) {
    acc = Op::combine(acc, finish.partials[o * finish.splits + s]);
  }
  shared[threadIdx.x] = acc;
  combine_in_block(shared, [](typename Op::Acc a, typename Op::Acc b) {
    return Op::combine(a, b);
  });
  if (threadIdx.x == 0) {
    finish.write(o, shared[0]);
  }
}
#endif

#if defined(__CUDACC__)
// Block b folds chunk (b % splits) of output (b / splits): its threads
// stride through the chunk, then combine in shared memory.
template <typename T, typename Op>
__global__ void reduce_partials_kernel(ReduceSource<T, Op> source,
                                       typename Op::Acc* partials,
                                       std::int64_t splits,
                                       std::int64_t chunk) {
  __shared__ typename Op::Acc shared[kThreads];
  const std::int64_t o = blockIdx.x / splits;
  const std::int64_t begin = (blockIdx.x % splits) * chunk;
  const std::int64_t end =
      begin + chunk < source.plan.reduced ? begin + chunk : source.plan.reduced;
  shared[threadIdx.x] =
      fold_lane(source, o, begin, end, threadIdx.x, blockDim.x);
  combine_in_block(shared, [](typename Op::Acc a, typename Op::Acc b) {
    return Op::combine(a, b);
  });
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = shared[0];
  }
}
#endif

// The same partial results on the host, thread by thread in order.
template <typename T, typename Op>
Status launch_partials(const KernelContext& ctx,
                       const ReduceSource<T, Op>& source,
                       typename Op::Acc* partials, std::int64_t splits,
                       std::int64_t chunk) {
  const std::int64_t blocks = source.plan.outputs * splits;
#if defined(__CUDACC__)
  reduce_partials_kernel<T, Op><<<static_cast<unsigned>(blocks), kThreads, 0,
                                  static_cast<cudaStream_t>(ctx.stream)>>>(
      source, partials, splits, chunk);
  return last_launch_status();
#else
  (void)ctx;
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t o = b / splits;
    const std::int64_t begin = (b % splits) * chunk;
    const std::int64_t end = begin + chunk < source.plan.reduced
                                 ? begin + chunk
                                 : source.plan.reduced;
    auto acc = Op::init();
    for (int thread = 0; thread < kThreads; ++thread) {
      acc =
          Op::combine(acc, fold_lane(source, o, begin, end, thread, kThreads));
    }
    partials[b] = acc;
  }
  return kSuccess;
#endif
}

// Long reductions with few outputs split; everything else is one thread per
// output.
constexpr std::int64_t kSplitBelowOutputs = 1 << 16;
constexpr std::int64_t kSplitFromReduced = 1 << 12;
constexpr std::int64_t kTargetBlocks = 1 << 10;

template <template <typename> class OpOf>
struct ReduceJob {
  template <typename T>
  struct Job {
    static Status run(const KernelContext& ctx, const TensorView& out,
                      const TensorView& in) {
      using Op = OpOf<T>;
      ReduceFinishFn<T, Op> finish{
          {plan_reduction(out, in), data_of<const T>(in)},
          data_of<T>(out),
          nullptr,
          1};
      const ReducePlan& plan = finish.source.plan;
      if (plan.outputs >= kSplitBelowOutputs ||
          plan.reduced < kSplitFromReduced) {
        return launch_each(ctx, plan.outputs, finish);
      }
      std::int64_t splits = kTargetBlocks / plan.outputs;
      const std::int64_t most = plan.reduced / (kThreads * 4);
      splits = splits < 1 ? 1 : (splits > most ? most : splits);
      // Chunks of whole 16-byte vectors keep every chunk's start aligned.
      constexpr std::int64_t kAlign = 16;
      const std::int64_t chunk =
          ((plan.reduced + splits - 1) / splits + kAlign - 1) / kAlign * kAlign;
      splits = (plan.reduced + chunk - 1) / chunk;
      torch_backend::KernelWorkspace workspace(
          ctx, static_cast<std::size_t>(plan.outputs * splits) *
                   sizeof(typename Op::Acc));
      auto* partials = static_cast<typename Op::Acc*>(workspace.get());
      const Status status =
          launch_partials<T, Op>(ctx, finish.source, partials, splits, chunk);
      if (status != kSuccess) {
        return status;
      }
      finish.partials = partials;
      finish.splits = splits;
#if defined(__CUDACC__)
      if (splits >= kThreads / 8) {
        reduce_finish_kernel<T, Op>
            <<<static_cast<unsigned>(plan.outputs), kThreads, 0,
               static_cast<cudaStream_t>(ctx.stream)>>>(finish);
        return last_launch_status();
      }
#endif
      return launch_each(ctx, plan.outputs, finish);
    }
  };
};

template <template <typename> class OpOf>
Status reduce(const KernelContext& ctx, const TensorView& out,
              const TensorView& in) {
  return dispatch<ReduceJob<OpOf>::template Job>(out.dtype, ctx, out, in);
}

// ---- variance: var (or std) and mean, one thread per output -----------

template <typename T>
struct VarianceFn {
  IndexMap<3> kept;  // var, mean (var again when absent), in
  IndexMap<1> folded;
  std::int64_t reduced;
  torch_backend::VarianceCall call;

  GPU_HD void operator()(std::int64_t o) const {
    std::int64_t at[3];
    kept.offsets(o, at);
    const T* in = static_cast<const T*>(call.in.data);
    double sum = 0;
    for (std::int64_t r = 0; r < reduced; ++r) {
      std::int64_t f[1];
      folded.offsets(r, f);
      sum += load(in[at[2] + f[0]]);
    }
    const double mean = sum / static_cast<double>(reduced);
    double squares = 0;
    for (std::int64_t r = 0; r < reduced; ++r) {
      std::int64_t f[1];
      folded.offsets(r, f);
      const double centred = load(in[at[2] + f[0]]) - mean;
      squares += centred * centred;
    }
    const double var =
        squares / (static_cast<double>(reduced) - call.correction);
    static_cast<T*>(call.var.data)[at[0]] =
        store<T>(call.standard_deviation ? sqrt(var) : var);
    if (call.mean.data != nullptr) {
      static_cast<T*>(call.mean.data)[at[1]] = store<T>(mean);
    }
  }
};

template <typename T>
struct VarianceJob {
  static Status run(const KernelContext& ctx,
                    const torch_backend::VarianceCall& call) {
    if constexpr (!is_floating<T>) {
      return kNotSupported;
    } else {
      const DimSplit split = split_dims(call.var);
      const TensorView& mean = call.mean.data != nullptr ? call.mean : call.var;
      const TensorView* views[3] = {&call.var, &mean, &call.in};
      const TensorView* input[1] = {&call.in};
      VarianceFn<T> fn{};
      fn.kept = map_selected(views, split.kept, split.kept_count, true, 2);
      fn.folded = map_selected(input, split.folded, split.folded_count);
      fn.folded.base[0] = 0;
      fn.reduced = fn.folded.count();
      fn.call = call;
      return launch_each(ctx, fn.kept.count(), fn);
    }
  }
};

inline Status variance(const KernelContext& ctx,
                       const torch_backend::VarianceCall& call) {
  return dispatch<VarianceJob>(call.in.dtype, ctx, call);
}

// ---- max / min with indices along one dimension -----------------------
// One thread per row; NaN wins, the first of equal extremes is taken.

template <typename T, bool Max>
struct ArgReduceFn {
  Rows<3> rows;  // in, indices, values (indices again when absent)
  const T* in;
  std::int64_t* indices;
  T* values;

  GPU_HD void operator()(std::int64_t row) const {
    std::int64_t at[3];
    rows.map.offsets(row, at);
    const std::int64_t step = rows.step[0];
    std::int64_t best_index = 0;
    Compute<T> best = load(in[at[0]]);
    for (std::int64_t j = 1; j < rows.length && !is_nan(best); ++j) {
      const Compute<T> x = load(in[at[0] + j * step]);
      if (is_nan(x) || (Max ? x > best : x < best)) {
        best = x;
        best_index = j;
      }
    }
    indices[at[1]] = best_index;
    if (values != nullptr) {
      values[at[2]] = in[at[0] + best_index * step];
    }
  }
};

template <bool Max>
struct ArgReduceJob {
  template <typename T>
  struct Job {
    static Status run(const KernelContext& ctx, const TensorView& values,
                      const TensorView& indices, const TensorView& in,
                      std::int32_t dim) {
      const TensorView& kept = values.data != nullptr ? values : indices;
      const TensorView* views[3] = {&in, &indices, &kept};
      const ArgReduceFn<T, Max> fn{
          Rows<3>(views, dim), data_of<const T>(in),
          data_of<std::int64_t>(indices),
          values.data != nullptr ? data_of<T>(values) : nullptr};
      return launch_each(ctx, fn.rows.count(), fn);
    }
  };
};

template <bool Max>
Status arg_reduce(const KernelContext& ctx, const TensorView& values,
                  const TensorView& indices, const TensorView& in,
                  std::int32_t dim) {
  return dispatch<ArgReduceJob<Max>::template Job>(in.dtype, ctx, values,
                                                   indices, in, dim);
}

inline void register_reductions(torch_backend::KernelRegistry& kernels) {
  kernels.reduction("sum", &reduce<SumOp>);
  kernels.reduction("mean", &reduce<MeanOp>);
  kernels.reduction("amax", &reduce<MaxOp>);
  kernels.reduction("amin", &reduce<MinOp>);
  kernels.variance(&variance);
  kernels.arg_reduction("max", &arg_reduce<true>);
  kernels.arg_reduction("min", &arg_reduce<false>);
}

}  // namespace gpu
