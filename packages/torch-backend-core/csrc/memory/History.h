// Internal: what the allocators did, while torch.<device>.memory's history
// recording is on (Allocator.h: record_memory_history).
#pragma once

#include <atomic>
#include <vector>

#include <torch_backend/Allocator.h>

namespace torch_backend::allocator {

namespace detail {
extern std::atomic<bool> g_recording_history;
}

inline bool recording_history() noexcept {
  return detail::g_recording_history.load(std::memory_order_relaxed);
}

// The recorder's context for an allocation starting now (before any lock:
// the recorder may take Python's lock).
AllocationContext gather_allocation_context();

void record_trace(int device, MemoryTraceEntry entry);
std::vector<MemoryTraceEntry> trace_of(int device);

}  // namespace torch_backend::allocator
