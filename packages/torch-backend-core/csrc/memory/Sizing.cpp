#include <c10/core/AllocatorConfig.h>
#include <c10/util/llvmMathExtras.h>

#include "Block.h"

namespace torch_backend::allocator {
namespace {

// Rounds up to the next of `divisions` equal steps between two powers of two.
size_t round_to_division(size_t size, size_t divisions) {
  const size_t power2_floor = c10::llvm::PowerOf2Floor(size);
  if (power2_floor == size) {
    return size;
  }
  const size_t step = std::max<size_t>(power2_floor / divisions, 1);
  return (size + step - 1) / step * step;
}

}  // namespace

size_t round_size(size_t size) {
  if (size < kMinBlockSize) {
    return kMinBlockSize;
  }
  using c10::CachingAllocator::AcceleratorAllocatorConfig;
  const size_t divisions =
      AcceleratorAllocatorConfig::roundup_power2_divisions(size);
  if (divisions > 1 && size > kMinBlockSize * divisions) {
    return round_to_division(size, divisions);
  }
  return (size + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

size_t segment_size(size_t rounded) {
  if (rounded <= kSmallSize) {
    return kSmallBuffer;
  }
  if (rounded < kMinLargeAlloc) {
    return kLargeBuffer;
  }
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

}  // namespace torch_backend::allocator
