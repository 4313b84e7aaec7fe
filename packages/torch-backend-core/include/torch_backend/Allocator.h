// The caching device allocator core registers for PrivateUse1.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Stream.h>

#include <torch_backend/Export.h>

namespace torch_backend {

// Allocates on the calling thread's current device and stream. Blocks freed
// on a stream are reused by later allocations on that stream; use
// record_stream for memory also used on other streams.
TORCH_BACKEND_API c10::DeviceAllocator* device_allocator();

// Memory from `data_ptr` will not be reused until the work currently enqueued
// on `stream` is done. No-op for memory not from device_allocator().
TORCH_BACKEND_API void record_stream(const c10::DataPtr& data_ptr,
                                     const c10::Stream& stream);

// Whether `data_ptr` was allocated by device_allocator().
TORCH_BACKEND_API bool is_device_allocation(const c10::DataPtr& data_ptr);

// The runtime allocation (segment) holding `data_ptr`'s memory: its base
// and size, for sharing it with another process (which maps the whole
// segment). Throws for memory not from device_allocator().
struct DeviceSegment {
  void* base = nullptr;
  size_t size = 0;
};
TORCH_BACKEND_API DeviceSegment device_segment_of(const c10::DataPtr& data_ptr);

// Caps the memory `device`'s cache may reserve at fraction * total memory.
TORCH_BACKEND_API void set_memory_fraction(double fraction,
                                           c10::DeviceIndex device);

}  // namespace torch_backend
