// The caching device allocator core registers for PrivateUse1.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Stream.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

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

// --- memory history and snapshots (torch.<device>.memory._snapshot) ------
// What the caller's recorder captured at an allocation (a stack trace):
// opaque to core, kept with the block and its trace entries.
using AllocationContext = std::shared_ptr<void>;
using AllocationContextRecorder = std::function<AllocationContext()>;

struct MemoryBlockInfo {
  enum class State { ActiveAllocated, ActiveAwaitingFree, Inactive };
  uintptr_t address = 0;
  size_t size = 0;
  size_t requested_size = 0;
  State state = State::Inactive;
  AllocationContext context;  // of its allocation, while recording
};

// One runtime allocation and the blocks it is split into, in address order.
struct MemorySegmentInfo {
  int device = 0;
  uintptr_t address = 0;
  size_t total_size = 0;
  int64_t stream = 0;
  bool is_large = false;
  // The mapped run of an expandable segment (PYTORCH_ALLOC_CONF=
  // expandable_segments:True), not one runtime allocation.
  bool is_expandable = false;
  std::vector<MemoryBlockInfo> blocks;
};

struct MemoryTraceEntry {
  enum class Action {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,  // pages mapped into an expandable segment
    SegmentUnmap,
    Oom,
  };
  Action action = Action::Alloc;
  uintptr_t address = 0;
  size_t size = 0;
  int64_t stream = 0;
  int64_t time_us = 0;  // since the epoch
  AllocationContext context;
};

// Starts (enabled) or stops recording what every device's allocator does,
// keeping the last `max_entries` actions per device; `recorder` (may be
// empty) is called at each allocation. Starting clears earlier entries.
TORCH_BACKEND_API void record_memory_history(bool enabled,
                                             AllocationContextRecorder recorder,
                                             size_t max_entries);
// Every segment the allocators hold now.
TORCH_BACKEND_API std::vector<MemorySegmentInfo> memory_segments();
// The recorded actions, one list per device (index = device).
TORCH_BACKEND_API std::vector<std::vector<MemoryTraceEntry>> memory_traces();

}  // namespace torch_backend
