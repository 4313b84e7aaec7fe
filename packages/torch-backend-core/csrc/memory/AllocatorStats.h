// What the device caching allocator's files share about its statistics: the
// aggregate-and-pool update every change of a block's state makes.
#pragma once

#include <cstddef>
#include <cstdint>

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Device.h>

#include "Block.h"

namespace torch_backend::allocator {

// Updates the aggregate stat and the one of the block's pool.
inline void update(c10::CachingAllocator::StatArray& stat,
                   const BlockPool& pool, int64_t delta) {
  using c10::CachingAllocator::StatType;
  const auto kind = static_cast<size_t>(pool.is_small ? StatType::SMALL_POOL
                                                      : StatType::LARGE_POOL);
  for (size_t index : {static_cast<size_t>(StatType::AGGREGATE), kind}) {
    if (delta >= 0) {
      stat[index].increase(static_cast<size_t>(delta));
    } else {
      stat[index].decrease(static_cast<size_t>(-delta));
    }
  }
}

inline c10::Device device_of(c10::DeviceIndex index) {
  return {c10::DeviceType::PrivateUse1, index};
}

}  // namespace torch_backend::allocator
