#include "History.h"

#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <utility>

namespace torch_backend::allocator {

namespace detail {
std::atomic<bool> g_recording_history{false};
}

namespace {

std::mutex g_mutex;
AllocationContextRecorder g_recorder;
size_t g_max_entries = 0;
std::map<int, std::deque<MemoryTraceEntry>> g_traces;

}  // namespace

AllocationContext gather_allocation_context() {
  AllocationContextRecorder recorder;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    recorder = g_recorder;
  }
  return recorder ? recorder() : nullptr;
}

void record_trace(int device, MemoryTraceEntry entry) {
  entry.time_us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!recording_history() || g_max_entries == 0) {
    return;
  }
  std::deque<MemoryTraceEntry>& trace = g_traces[device];
  if (trace.size() >= g_max_entries) {
    trace.pop_front();
  }
  trace.push_back(std::move(entry));
}

std::vector<MemoryTraceEntry> trace_of(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_traces.find(device);
  if (it == g_traces.end()) {
    return {};
  }
  return {it->second.begin(), it->second.end()};
}

}  // namespace torch_backend::allocator

namespace torch_backend {

void record_memory_history(bool enabled, AllocationContextRecorder recorder,
                           size_t max_entries) {
  std::lock_guard<std::mutex> lock(allocator::g_mutex);
  allocator::g_traces.clear();
  allocator::g_recorder = enabled ? std::move(recorder) : nullptr;
  allocator::g_max_entries = enabled ? max_entries : 0;
  allocator::detail::g_recording_history.store(enabled);
}

}  // namespace torch_backend
