// dropout from a counter-based generator: element i draws from counter
// offset + i of Philox4x32-10 keyed by the seed core draws from the device
// generator (DeviceKernels.h); word (counter % 4) of block (counter / 4), as
// fake's kernel does, so both devices drop the same elements.
#pragma once

#include "Portable.cuh"

namespace gpu {

using torch_backend::DropoutCall;

struct Philox {
  std::uint32_t words[4];
};

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3"): four 32-bit outputs per 128-bit counter under a 64-bit key.
GPU_HD Philox philox(std::uint64_t counter, std::uint64_t key) {
  std::uint32_t c0 = static_cast<std::uint32_t>(counter);
  std::uint32_t c1 = static_cast<std::uint32_t>(counter >> 32);
  std::uint32_t c2 = 0, c3 = 0;
  std::uint32_t k0 = static_cast<std::uint32_t>(key);
  std::uint32_t k1 = static_cast<std::uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t{0xD2511F53} * c0;
    const std::uint64_t p1 = std::uint64_t{0xCD9E8D57} * c2;
    const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<std::uint32_t>(p1);
    c3 = static_cast<std::uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
  return {{c0, c1, c2, c3}};
}

template <typename T>
struct DropoutFn {
  T* out;
  bool* mask;
  const T* in;
  double keep;
  std::uint64_t seed, offset;
  const std::uint64_t* seed_on_device;  // set in graphs: read when it runs

  GPU_HD void operator()(std::int64_t i) const {
    const std::uint64_t key =
        seed_on_device != nullptr ? *seed_on_device : seed;
    const std::uint64_t counter = offset + static_cast<std::uint64_t>(i);
    const std::uint32_t word = philox(counter / 4, key).words[counter % 4];
    const float u = static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
    const bool kept = u < keep;
    using C = Compute<T>;
    const C scale = keep == 0 ? C(0) : static_cast<C>(1 / keep);
    mask[i] = kept;
    out[i] = store<T>(kept ? load(in[i]) * scale : C(0));
  }
};

template <typename T>
struct DropoutJob {
  static Status run(const KernelContext& ctx, const DropoutCall& call) {
    if constexpr (!is_floating<T>) {
      return kNotSupported;
    } else {
      const DropoutFn<T> fn{data_of<T>(call.out) + call.out.offset,
                            data_of<bool>(call.mask) + call.mask.offset,
                            data_of<const T>(call.input) + call.input.offset,
                            1 - call.p,
                            call.seed,
                            call.offset,
                            call.seed_on_device};
      return launch_each(ctx, call.out.numel(), fn);
    }
  }
};

inline Status dropout(const KernelContext& ctx, const DropoutCall& call) {
  return dispatch<DropoutJob>(call.out.dtype, ctx, call);
}

}  // namespace gpu
