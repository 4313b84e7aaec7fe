// Internal: graphs' private memory pools in the caching allocator
// (DeviceCachingAllocator.h says how they behave).
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>

namespace torch_backend {

// From begin to end, allocations on `device`'s capturing streams come from
// `pool` (created on first use, one more user per begin).
void begin_allocate_to_pool(c10::DeviceIndex device, c10::MempoolId_t pool);
void end_allocate_to_pool(c10::DeviceIndex device);
// Drops one user of `pool`; without users its free memory goes back to the
// runtime at the next empty_cache.
void release_pool(c10::DeviceIndex device, c10::MempoolId_t pool);

}  // namespace torch_backend
