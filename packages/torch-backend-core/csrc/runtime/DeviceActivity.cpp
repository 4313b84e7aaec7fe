#include "DeviceActivity.h"

#include <c10/core/DeviceGuard.h>

#include <chrono>
#include <map>
#include <mutex>

#include <torch_backend/Runtime.h>

#include "Streams.h"

namespace torch_backend {

namespace detail {
std::atomic<bool> g_collecting_device_activity{false};
}

namespace {

struct PendingRecord {
  const char* name;
  int device;
  int64_t stream_id;
  EventHandle start;
  EventHandle end;
  uint64_t correlation;
};

// A completed event per device and the host time it completed by: device
// times are offsets from it.
struct Reference {
  EventHandle event = nullptr;
  int64_t host_ns = 0;
};

std::mutex g_mutex;
std::vector<PendingRecord> g_pending;
std::map<int, Reference> g_references;
thread_local std::vector<uint64_t> t_correlations;

int64_t host_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void destroy(EventHandle event) {
  if (event != nullptr) {
    (void)active_runtime().event_destroy(event);
  }
}

// Under g_mutex. The first activity of a session on `device` makes its
// reference: an event that has completed, and the host time just after.
bool ensure_reference(int device, StreamHandle stream) {
  if (g_references.count(device) != 0) {
    return true;
  }
  DeviceRuntime& runtime = active_runtime();
  Reference reference;
  if (runtime.event_create(&reference.event, true) != kSuccess) {
    return false;
  }
  if (runtime.event_record(reference.event, stream) != kSuccess ||
      runtime.event_synchronize(reference.event) != kSuccess) {
    destroy(reference.event);
    return false;
  }
  reference.host_ns = host_now_ns();
  g_references[device] = reference;
  return true;
}

}  // namespace

DeviceActivityScope::DeviceActivityScope(const char* name,
                                         c10::Device device) noexcept
    : name_(name), device_(device.index()) {
  try {
    const c10::Stream stream = current_stream(device_);
    stream_ = native_stream(stream);
    stream_id_ = stream.id();
    correlation_ = t_correlations.empty() ? 0 : t_correlations.back();
    c10::DeviceGuard guard(device);
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!ensure_reference(device_, stream_)) {
      return;
    }
    DeviceRuntime& runtime = active_runtime();
    if (runtime.event_create(&start_, true) != kSuccess) {
      start_ = nullptr;
      return;
    }
    if (runtime.event_record(start_, stream_) != kSuccess) {
      destroy(start_);
      start_ = nullptr;
    }
  } catch (...) {
    start_ = nullptr;
  }
}

DeviceActivityScope::~DeviceActivityScope() {
  if (start_ == nullptr) {
    return;
  }
  DeviceRuntime& runtime = active_runtime();
  EventHandle end = nullptr;
  if (runtime.event_create(&end, true) != kSuccess ||
      runtime.event_record(end, stream_) != kSuccess) {
    destroy(end);
    destroy(start_);
    return;
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_pending.push_back({name_, device_, stream_id_, start_, end, correlation_});
}

void push_activity_correlation(uint64_t id) { t_correlations.push_back(id); }

void pop_activity_correlation() {
  if (!t_correlations.empty()) {
    t_correlations.pop_back();
  }
}

void start_collecting_device_activity() {
  std::lock_guard<std::mutex> lock(g_mutex);
  detail::g_collecting_device_activity.store(true);
}

std::vector<DeviceActivityRecord> stop_collecting_device_activity() {
  detail::g_collecting_device_activity.store(false);
  std::vector<PendingRecord> pending;
  std::map<int, Reference> references;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    pending.swap(g_pending);
    references.swap(g_references);
  }
  DeviceRuntime& runtime = active_runtime();
  std::vector<DeviceActivityRecord> records;
  records.reserve(pending.size());
  for (const PendingRecord& p : pending) {
    const Reference& reference = references[p.device];
    float start_ms = 0;
    float end_ms = 0;
    if (runtime.event_synchronize(p.end) == kSuccess &&
        runtime.event_elapsed_time(&start_ms, reference.event, p.start) ==
            kSuccess &&
        runtime.event_elapsed_time(&end_ms, reference.event, p.end) ==
            kSuccess) {
      const auto ns = [&](float ms) {
        return reference.host_ns + static_cast<int64_t>(ms * 1e6);
      };
      records.push_back({p.name, p.device, p.stream_id, ns(start_ms),
                         ns(end_ms), p.correlation});
    }
    destroy(p.start);
    destroy(p.end);
  }
  for (auto& [device, reference] : references) {
    destroy(reference.event);
  }
  return records;
}

}  // namespace torch_backend
