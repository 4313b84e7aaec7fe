// Internal: device time of the ops core runs on a device, for profilers.
//
// While a profiler session collects (PyTorch's profiler with the device's
// activity, KinetoProfiler.cpp), every device kernel core launches is
// bracketed by two timing events on its stream; when the session ends the
// events give each op's start and end on the device, converted to the host's
// clock through a reference event per device.
#pragma once

#include <c10/core/Device.h>
#include <c10/macros/Macros.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <torch_backend/DeviceRuntime.h>

namespace torch_backend {

namespace detail {
extern std::atomic<bool> g_collecting_device_activity;
}

// Cheap enough for every kernel launch.
inline bool collecting_device_activity() noexcept {
  return detail::g_collecting_device_activity.load(std::memory_order_relaxed);
}

// Times the device work enqueued during its lifetime on the current stream of
// `device`, as activity `name` (a string with static lifetime). Construct only
// while collecting; failures of the runtime drop the record, never the op.
class DeviceActivityScope {
 public:
  DeviceActivityScope(const char* name, c10::Device device) noexcept;
  ~DeviceActivityScope();
  DeviceActivityScope(const DeviceActivityScope&) = delete;
  DeviceActivityScope& operator=(const DeviceActivityScope&) = delete;

 private:
  const char* name_;
  int device_;
  StreamHandle stream_ = nullptr;
  int64_t stream_id_ = 0;
  EventHandle start_ = nullptr;
  uint64_t correlation_ = 0;
};

struct DeviceActivityRecord {
  std::string name;
  int device = 0;
  int64_t stream_id = 0;
  int64_t start_ns = 0;  // host clock (system_clock, nanoseconds since epoch)
  int64_t end_ns = 0;
  uint64_t correlation = 0;  // the profiler's id of the op that launched it
};

// The profiler's id of the op running on this thread (0: none).
void push_activity_correlation(uint64_t id);
void pop_activity_correlation();

void start_collecting_device_activity();
// Waits for the recorded work and returns what ran, in launch order.
std::vector<DeviceActivityRecord> stop_collecting_device_activity();

}  // namespace torch_backend
