// Sums per output over many items, spread over the whole GPU: the statistics
// of batch_norm (a channel's N * L elements) and layer_norm (a row's elements,
// a column's rows). A thread per output folding its items in order leaves
// all but a few hundred threads idle (a batch_norm of 32 channels ran 150x
// slower than CUDA's); here blocks share an output's items, threads stride
// through them (neighbours read neighbouring items), and the partial sums
// combine in a block-wide tree, then across blocks.
#pragma once

#include "Portable.cuh"

namespace gpu {

// K running sums in double, added to by an items function:
// fn(output, item, sums) adds item's K terms of output into sums[0..K).
// (A plain aggregate: shared memory holds arrays of it.)
template <int K>
struct Sums {
  double v[K];
  GPU_HD static Sums zero() {
    Sums sums;
    for (int k = 0; k < K; ++k) {
      sums.v[k] = 0;
    }
    return sums;
  }
  GPU_HD void add(const Sums& other) {
    for (int k = 0; k < K; ++k) {
      v[k] += other.v[k];
    }
  }
};

// Items [begin, end) of `output`, from item begin + lane, every lanes-th.
template <int K, typename Fn>
GPU_HD Sums<K> fold_items(const Fn& fn, std::int64_t output, std::int64_t begin,
                          std::int64_t end, std::int64_t lane,
                          std::int64_t lanes) {
  Sums<K> sums = Sums<K>::zero();
  for (std::int64_t item = begin + lane; item < end; item += lanes) {
    fn(output, item, sums.v);
  }
  return sums;
}

#if defined(__CUDACC__)
// Block b: chunk (b % splits) of output (b / splits), into partials[b].
template <int K, typename Fn>
__global__ void partial_sums_kernel(Fn fn, std::int64_t items,
                                    std::int64_t splits, std::int64_t chunk,
                                    Sums<K>* partials) {
  __shared__ Sums<K> shared[kThreads];
  const std::int64_t output = blockIdx.x / splits;
  const std::int64_t begin = (blockIdx.x % splits) * chunk;
  const std::int64_t end = begin + chunk < items ? begin + chunk : items;
  shared[threadIdx.x] =
      fold_items<K>(fn, output, begin, end, threadIdx.x, blockDim.x);
  combine_in_block(shared, [](Sums<K> a, const Sums<K>& b) {
    a.add(b);
    return a;
  });
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = shared[0];
  }
}

// Block o: output o's `splits` partials into sums[o].
template <int K>
__global__ void combine_partials_kernel(const Sums<K>* partials,
                                        std::int64_t splits, Sums<K>* sums) {
  __shared__ Sums<K> shared[kThreads];
  Sums<K> mine = Sums<K>::zero();
  for (std::int64_t s = threadIdx.x; s < splits; s += blockDim.x) {
    mine.add(partials[blockIdx.x * splits + s]);
  }
  shared[threadIdx.x] = mine;
  combine_in_block(shared, [](Sums<K> a, const Sums<K>& b) {
    a.add(b);
    return a;
  });
  if (threadIdx.x == 0) {
    sums[blockIdx.x] = shared[0];
  }
}
#endif

// The K sums of every output, into `sums` (device memory for `outputs`
// Sums<K>), enqueued on ctx.stream; partial results take a workspace.
template <int K, typename Fn>
Status sum_items(const KernelContext& ctx, std::int64_t outputs,
                 std::int64_t items, const Fn& fn, Sums<K>* sums) {
  if (outputs <= 0) {
    return kSuccess;
  }
  // About a thousand blocks in all, none with fewer than 4 items a thread.
  constexpr std::int64_t kTargetBlocks = 1 << 10;
  std::int64_t splits = (kTargetBlocks + outputs - 1) / outputs;
  const std::int64_t most = (items + kThreads * 4 - 1) / (kThreads * 4);
  splits = splits < most ? splits : most;
  splits = splits < 1 ? 1 : splits;
  const std::int64_t chunk = (items + splits - 1) / splits;
  torch_backend::KernelWorkspace workspace(
      ctx, static_cast<std::size_t>(outputs * splits) * sizeof(Sums<K>));
  auto* partials = static_cast<Sums<K>*>(workspace.get());
#if defined(__CUDACC__)
  const auto stream = static_cast<cudaStream_t>(ctx.stream);
  partial_sums_kernel<K>
      <<<static_cast<unsigned>(outputs * splits), kThreads, 0, stream>>>(
          fn, items, splits, chunk, partials);
  combine_partials_kernel<K>
      <<<static_cast<unsigned>(outputs), kThreads, 0, stream>>>(partials,
                                                                splits, sums);
  return last_launch_status();
#else
  // The same partials on the host, a block's threads one after another.
  (void)ctx;
  for (std::int64_t output = 0; output < outputs; ++output) {
    Sums<K> total = Sums<K>::zero();
    for (std::int64_t s = 0; s < splits; ++s) {
      const std::int64_t begin = s * chunk;
      const std::int64_t end = begin + chunk < items ? begin + chunk : items;
      Sums<K> part = Sums<K>::zero();
      for (std::int64_t lane = 0; lane < kThreads; ++lane) {
        part.add(fold_items<K>(fn, output, begin, end, lane, kThreads));
      }
      partials[output * splits + s] = part;
      total.add(part);
    }
    sums[output] = total;
  }
  return kSuccess;
#endif
}

}  // namespace gpu
