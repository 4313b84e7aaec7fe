#include "Streams.h"

#include "Capture.h"

#include "StreamDependencies.h"

#include <array>
#include <atomic>
#include <mutex>

#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <torch_backend/Runtime.h>

namespace torch_backend {
namespace {

constexpr int kPoolSize = 8;         // streams per priority class
constexpr int kPriorityClasses = 2;  // normal, high

struct DevicePools {
  std::once_flag created[kPriorityClasses];
  std::array<StreamHandle, kPoolSize * kPriorityClasses> handles{};
  std::atomic<unsigned> next[kPriorityClasses] = {};
};

DevicePools& pools(c10::DeviceIndex device) {
  static auto* all = new std::array<DevicePools, kMaxDevices>();
  TORCH_CHECK(device >= 0 && device < kMaxDevices, "device index ", device,
              " out of range");
  return (*all)[device];
}

thread_local std::array<c10::StreamId, kMaxDevices> current_ids{};

c10::Device device_of(c10::DeviceIndex index) {
  return {c10::DeviceType::PrivateUse1, index};
}

void create_pool(c10::DeviceIndex device, int klass) {
  int least = 0;
  int greatest = 0;
  DeviceRuntime& runtime = active_runtime();
  TORCH_BACKEND_CHECK(runtime.stream_priority_range(&least, &greatest));
  const int priority = klass == 0 ? least : greatest;
  c10::DeviceGuard guard(device_of(device));
  DevicePools& p = pools(device);
  for (int i = 0; i < kPoolSize; ++i) {
    TORCH_BACKEND_CHECK(
        runtime.stream_create(&p.handles[klass * kPoolSize + i], priority));
  }
}

}  // namespace

c10::DeviceIndex current_device_index() {
  return static_cast<c10::DeviceIndex>(current_device());
}

c10::DeviceIndex checked_device_index(c10::DeviceIndex device) {
  device = device < 0 ? current_device_index() : device;
  check_device_index(device);
  return device;
}

c10::Stream default_stream(c10::DeviceIndex device) {
  return c10::Stream(c10::Stream::UNSAFE,
                     device_of(checked_device_index(device)), 0);
}

c10::Stream current_stream(c10::DeviceIndex device) {
  device = checked_device_index(device);
  return c10::Stream(c10::Stream::UNSAFE, device_of(device),
                     current_ids[device]);
}

void set_current_stream(const c10::Stream& stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "expected a ", c10::get_privateuse1_backend(),
              " stream, got one on ", stream.device());
  check_device_index(stream.device_index());
  current_ids[stream.device_index()] = stream.id();
}

c10::Stream stream_from_pool(c10::DeviceIndex device, int priority) {
  device = checked_device_index(device);
  const int klass = priority < 0 ? 1 : 0;
  DevicePools& p = pools(device);
  std::call_once(p.created[klass], [&] { create_pool(device, klass); });
  const unsigned slot = p.next[klass]++ % kPoolSize;
  return c10::Stream(c10::Stream::UNSAFE, device_of(device),
                     1 + klass * kPoolSize + slot);
}

StreamHandle native_stream(const c10::Stream& stream) {
  if (stream.id() == 0) {
    return nullptr;
  }
  const auto index = stream.id() - 1;
  TORCH_CHECK(index >= 0 && index < kPoolSize * kPriorityClasses,
              "unknown stream id ", stream.id(), " on ", stream.device());
  StreamHandle handle = pools(stream.device_index()).handles[index];
  TORCH_CHECK(handle != nullptr, "stream ", stream.id(), " on ",
              stream.device(), " was never created");
  return handle;
}

void synchronize_stream(const c10::Stream& stream) {
  refuse_while_capturing(stream, "waiting on the host for its work",
                         kHostSyncAdvice);
  TORCH_BACKEND_CHECK(
      active_runtime().stream_synchronize(native_stream(stream)));
  check_stream_dependencies(stream);
}

void wait_for_host_access(c10::Device device) {
  c10::DeviceGuard guard(device);
  synchronize_stream(current_stream(device.index()));
}

}  // namespace torch_backend
