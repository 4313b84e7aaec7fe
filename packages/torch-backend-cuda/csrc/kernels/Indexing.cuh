// Indexing along one dimension (index_select, gather: one thread per output
// element; index_add, scatter_add: one thread per source element, adding
// atomically, since indices may repeat). Each kernel maps its elements with
// three views of one shape: the one written or read element by element, the
// other operand with a zero stride along dim (the index supplies that
// coordinate), and the index, broadcast where it has no extent.
#pragma once

#include "Portable.cuh"

namespace gpu {

using torch_backend::IndexCall;

// `view` over `shape`'s sizes, with stride 0 along `dim`.
inline TensorView along(const TensorView& view, const TensorView& shape,
                        std::int32_t dim) {
  TensorView result = view;
  result.dim = shape.dim;
  for (std::int32_t d = 0; d < shape.dim; ++d) {
    result.sizes[d] = shape.sizes[d];
  }
  result.strides[dim] = 0;
  return result;
}

// A 1-D index (index_select, index_add) seen over `shape`: it moves along dim
// only.
inline TensorView spread(const TensorView& index, const TensorView& shape,
                         std::int32_t dim) {
  TensorView result = index;
  result.dim = shape.dim;
  for (std::int32_t d = 0; d < shape.dim; ++d) {
    result.sizes[d] = shape.sizes[d];
    result.strides[d] = d == dim ? index.strides[0] : 0;
  }
  return result;
}

// What the three views are, per kernel: [0] the element-wise view, [1] the
// indexed one (stride 0 along dim), [2] the index.
template <typename T, typename Index, bool Accumulate>
struct IndexFn {
  IndexMap<3> map;
  T* written;     // out
  const T* read;  // self (select, gather) or source (add, scatter_add)
  const Index* index;
  std::int64_t indexed_stride;  // along dim, of the indexed view
  Compute<T> alpha;

  GPU_HD void operator()(std::int64_t i) const {
    std::int64_t at[3];
    map.offsets(i, at);
    const std::int64_t target =
        at[1] + static_cast<std::int64_t>(index[at[2]]) * indexed_stride;
    if constexpr (Accumulate) {  // out[target] += alpha * source[i]
      atomic_add(written + target, alpha * load(read[at[0]]));
    } else {  // out[i] = self[target]
      written[at[0]] = read[target];
    }
  }
};

template <bool Accumulate, bool OneDimensionalIndex>
struct IndexJob {
  template <typename T>
  struct Job {
    static Status run(const KernelContext& ctx, const IndexCall& call) {
      // PyTorch takes int32 indices as well as int64 ones.
      if (call.index.dtype == DType::Int32) {
        return run_with<std::int32_t>(ctx, call);
      }
      if (call.index.dtype == DType::Int64) {
        return run_with<std::int64_t>(ctx, call);
      }
      return kNotSupported;
    }

    template <typename Index>
    static Status run_with(const KernelContext& ctx, const IndexCall& call) {
      if constexpr (Accumulate && !has_atomic_add<T>) {
        return kNotSupported;
      } else {
        // Element-wise over out (select, gather) or source (the adds; for
        // scatter_add only the part the index covers); the indexed view is
        // self or out.
        TensorView each = Accumulate ? call.source : call.out;
        if (Accumulate && !OneDimensionalIndex) {
          for (std::int32_t d = 0; d < each.dim; ++d) {
            each.sizes[d] = call.index.sizes[d];
          }
        }
        const TensorView& indexed = Accumulate ? call.out : call.self;
        const TensorView index = OneDimensionalIndex
                                     ? spread(call.index, each, call.dim)
                                     : call.index;
        const TensorView other = along(indexed, each, call.dim);
        const TensorView* views[3] = {&each, &other, &index};
        IndexFn<T, Index, Accumulate> fn{};
        fn.map = map_all(views);
        fn.written = data_of<T>(call.out);
        fn.read = data_of<const T>(Accumulate ? call.source : call.self);
        fn.index = data_of<const Index>(call.index);
        fn.indexed_stride = indexed.strides[call.dim];
        fn.alpha = Accumulate && OneDimensionalIndex
                       ? scalar_as<Compute<T>>(call.alpha)
                       : Compute<T>(1);
        return launch_each(ctx, fn.map.count(), fn);
      }
    }
  };
};

template <bool Accumulate, bool OneDimensionalIndex>
Status indexing(const KernelContext& ctx, const IndexCall& call) {
  return dispatch<IndexJob<Accumulate, OneDimensionalIndex>::template Job>(
      call.out.dtype, ctx, call);
}

inline void register_indexing(torch_backend::KernelRegistry& kernels) {
  kernels.indexing("index_select", &indexing<false, true>);
  kernels.indexing("gather", &indexing<false, false>);
  kernels.indexing("index_add", &indexing<true, true>);
  kernels.indexing("scatter_add", &indexing<true, false>);
}

}  // namespace gpu
