#include "CountingRuntime.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <torch_backend/Activate.h>

namespace torch_backend::testing {
namespace {
thread_local int current_device = 0;
}

Status CountingRuntime::device_count(int* count) {
  *count = kDevices;
  return kSuccess;
}

Status CountingRuntime::get_device(int* device) {
  *device = current_device;
  return kSuccess;
}

Status CountingRuntime::set_device(int device) {
  if (device < 0 || device >= kDevices) {
    return kBadDevice;
  }
  current_device = device;
  return kSuccess;
}

Status CountingRuntime::synchronize_device() { return kSuccess; }

Status CountingRuntime::device_properties(int, DeviceProperties* props) {
  props->name = "counting";
  props->total_memory = capacity;
  return kSuccess;
}

Status CountingRuntime::mem_get_info(std::size_t* free_bytes,
                                     std::size_t* total_bytes) {
  *total_bytes = capacity;
  *free_bytes = capacity - used(current_device);
  return kSuccess;
}

Status CountingRuntime::malloc(void** ptr, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (used_[current_device] + bytes > capacity) {
    return kOom;
  }
  *ptr = std::malloc(bytes);
  ++mallocs;
  malloc_calls.emplace_back(current_device, bytes);
  used_[current_device] += bytes;
  live_[*ptr] = {current_device, bytes};
  return kSuccess;
}

Status CountingRuntime::free(void* ptr) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) {
    return kBadDevice;
  }
  used_[it->second.first] -= it->second.second;
  live_.erase(it);
  std::free(ptr);
  ++frees;
  return kSuccess;
}

Status CountingRuntime::memcpy(void* dst, const void* src, std::size_t bytes,
                               CopyKind) {
  std::memcpy(dst, src, bytes);
  return kSuccess;
}

Status CountingRuntime::host_malloc(void** ptr, std::size_t bytes) {
  *ptr = std::malloc(bytes);
  return kSuccess;
}

Status CountingRuntime::host_free(void* ptr) {
  std::free(ptr);
  return kSuccess;
}

Status CountingRuntime::memcpy_async(void* dst, const void* src,
                                     std::size_t bytes, CopyKind kind,
                                     StreamHandle) {
  return memcpy(dst, src, bytes, kind);
}

Status CountingRuntime::stream_create(StreamHandle* stream, int) {
  std::lock_guard<std::mutex> lock(mutex_);
  *stream =
      reinterpret_cast<StreamHandle>(static_cast<uintptr_t>(next_stream_++));
  return kSuccess;
}

Status CountingRuntime::stream_destroy(StreamHandle) { return kSuccess; }

Status CountingRuntime::stream_query(StreamHandle stream, bool* complete) {
  std::lock_guard<std::mutex> lock(mutex_);
  *complete = !held_[stream];
  return kSuccess;
}

Status CountingRuntime::stream_synchronize(StreamHandle) { return kSuccess; }

Status CountingRuntime::stream_wait_event(StreamHandle, EventHandle) {
  return kSuccess;
}

Status CountingRuntime::event_create(EventHandle* event, bool) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* created = new FakeEvent();
  events_.push_back(created);
  *event = created;
  return kSuccess;
}

Status CountingRuntime::event_destroy(EventHandle) { return kSuccess; }

Status CountingRuntime::event_record(EventHandle event, StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* e = static_cast<FakeEvent*>(event);
  e->stream = stream;
  e->complete = !held_[stream];
  return kSuccess;
}

Status CountingRuntime::event_query(EventHandle event, bool* complete) {
  std::lock_guard<std::mutex> lock(mutex_);
  *complete = static_cast<FakeEvent*>(event)->complete;
  return kSuccess;
}

Status CountingRuntime::event_synchronize(EventHandle event) {
  // Synchronizing on held work would deadlock a single-threaded test; the
  // tests release streams before anything waits.
  std::lock_guard<std::mutex> lock(mutex_);
  static_cast<FakeEvent*>(event)->complete = true;
  return kSuccess;
}

Status CountingRuntime::event_elapsed_time(float* ms, EventHandle,
                                           EventHandle) {
  *ms = 0;
  return kSuccess;
}

void CountingRuntime::hold(StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  held_[stream] = true;
}

void CountingRuntime::release(StreamHandle stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  held_[stream] = false;
  for (FakeEvent* e : events_) {
    if (e->stream == stream) {
      e->complete = true;
    }
  }
}

std::string CountingRuntime::error_text(Status status) {
  return status == kOom ? "counting runtime is full" : "counting runtime error";
}

bool CountingRuntime::is_out_of_memory(Status status) { return status == kOom; }

std::size_t CountingRuntime::used(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_[device];
}

CountingRuntime& counting_runtime() {
  static CountingRuntime* runtime = [] {
    auto* r = new CountingRuntime();
    activate(r);
    return r;
  }();
  return *runtime;
}

}  // namespace torch_backend::testing
