// The ACL emulator's runtime (libascendcl.so): the subset of CANN's ACL
// runtime API that torch-backend-npu calls, on host memory and host threads.
//
// Configuration (environment, read at aclInit):
//   ACL_EMULATOR_DEVICE_COUNT  devices (default 2)
//   ACL_EMULATOR_MEMORY_MB     memory per device (default 16384); allocations
//                              beyond it fail with
//                              ACL_ERROR_RT_MEMORY_ALLOCATION
//   ACL_EMULATOR_SOC_NAME      aclrtGetSocName (default "Ascend910B-emulator")
//   ACL_EMULATOR_FAIL          name:N[,name:N...]: the Nth call of each named
//                              function fails with ACL_ERROR_RT_INTERNAL_ERROR
//
// As in CANN: aclInit comes first (else ACL_ERROR_UNINITIALIZE), the current
// device is per thread and unset until aclrtSetDevice
// (ACL_ERROR_RT_CONTEXT_NULL), each stream runs its work in order on its own
// thread, a failed kernel surfaces at the next synchronisation of its
// stream, and virtual memory is reserved ranges into which physical
// allocations (2 MiB pages, counted against the device's memory) are mapped.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include "Emulator.h"
#include "RuntimeState.h"
#include "Streams.h"

namespace acl_emulator {
namespace {

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtoull(value, nullptr, 10)
                                            : fallback;
}

thread_local int current_device = -1;
thread_local std::string recent_error;  // aclGetRecentErrMsg

void parse_faults(State& s) {
  const char* spec = std::getenv("ACL_EMULATOR_FAIL");
  std::string rest = spec != nullptr ? spec : "";
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string item = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    const std::size_t colon = item.find(':');
    if (colon != std::string::npos) {
      s.fail_at[item.substr(0, colon)] =
          std::strtoull(item.c_str() + colon + 1, nullptr, 10);
    }
  }
}

}  // namespace

// Leaked: memory may be freed until the process ends.
State& state() {
  static State* instance = new State();
  return *instance;
}

bool initialized() {
  State& s = state();
  const std::lock_guard<std::mutex> lock(s.mutex);
  return s.initialized;
}

bool is_device_address(const void* ptr) {
  return (reinterpret_cast<std::uintptr_t>(ptr) >> 62) == 1;
}

int device_of_address(const void* ptr) {
  return static_cast<int>((reinterpret_cast<std::uintptr_t>(ptr) >> kTagShift) &
                          0xff);
}

// The calling thread's device, after the checks every device call makes.
aclError device_of_thread(const char* call, int* device) {
  if (!initialized()) {
    return fail(ACL_ERROR_UNINITIALIZE,
                std::string(call) + ": aclInit has not been called");
  }
  if (current_device < 0) {
    return fail(ACL_ERROR_RT_CONTEXT_NULL,
                std::string(call) +
                    ": no current device on this thread (call aclrtSetDevice)");
  }
  *device = current_device;
  return ACL_SUCCESS;
}

std::vector<Stream*> streams_of_device(int index) {
  Device& device = state().devices[index];
  const std::lock_guard<std::mutex> lock(device.mutex);
  std::vector<Stream*> streams(device.streams.begin(), device.streams.end());
  streams.push_back(device.default_stream);
  return streams;
}

Stream* stream_of(aclrtStream stream, int device) {
  if (stream != nullptr) {
    return static_cast<Stream*>(stream);
  }
  return state().devices[device].default_stream;
}

void set_recent_error(const std::string& text) { recent_error = text; }

aclError fail(aclError code, const std::string& message) {
  recent_error = "EE9999: [acl emulator] " + message;
  return code;
}

bool injected_fault(const char* call) {
  State& s = state();
  const std::lock_guard<std::mutex> lock(s.mutex);
  auto target = s.fail_at.find(call);
  if (target == s.fail_at.end()) {
    return false;
  }
  if (++s.calls[call] != target->second) {
    return false;
  }
  fail(ACL_ERROR_RT_INTERNAL_ERROR,
       std::string(call) + ": injected failure (call " +
           std::to_string(target->second) + ", ACL_EMULATOR_FAIL)");
  return true;
}

void* host_address(const void* device_ptr, std::size_t bytes,
                   const char* call) {
  if (!is_device_address(device_ptr)) {
    fail(ACL_ERROR_RT_PARAM_INVALID,
         std::string(call) + ": not a device address");
    return nullptr;
  }
  const int index = device_of_address(device_ptr);
  State& s = state();
  if (index >= s.device_count) {
    fail(ACL_ERROR_RT_PARAM_INVALID,
         std::string(call) + ": bad device address");
    return nullptr;
  }
  Device& device = s.devices[index];
  const auto address = reinterpret_cast<std::uintptr_t>(device_ptr);
  const std::lock_guard<std::mutex> lock(device.mutex);
  auto it = device.allocations.upper_bound(address);
  // Or pages mapped into a reserved range, one after another.
  auto in_mapped_pages = [&] {
    for (std::uintptr_t at = address; at < address + bytes;) {
      auto page = device.mapped.upper_bound(at);
      if (page == device.mapped.begin() ||
          at >= std::prev(page)->first + std::prev(page)->second) {
        return false;
      }
      at = std::prev(page)->first + std::prev(page)->second;
    }
    return !device.mapped.empty();
  };
  if ((it == device.allocations.begin() ||
       address + bytes > std::prev(it)->first + std::prev(it)->second) &&
      !in_mapped_pages()) {
    fail(ACL_ERROR_RT_PARAM_INVALID,
         std::string(call) + ": " + std::to_string(bytes) +
             " bytes at this device address are not inside one allocation");
    return nullptr;
  }
  return reinterpret_cast<void*>(address & kAddressMask);
}

aclError enqueue(aclrtStream stream, std::function<aclError()> task,
                 const char* call) {
  int device = 0;
  if (const aclError status = device_of_thread(call, &device)) {
    return status;
  }
  stream_of(stream, device)->push(std::move(task));
  return ACL_SUCCESS;
}

}  // namespace acl_emulator

using namespace acl_emulator;

extern "C" {

const char* aclGetRecentErrMsg() {
  return recent_error.empty() ? nullptr : recent_error.c_str();
}

aclError aclInit(const char* /*configPath*/) {
  State& s = state();
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (s.initialized) {
    return fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized");
  }
  if (s.devices == nullptr) {  // devices outlive aclFinalize, as memory does
    s.device_count =
        static_cast<int>(env_number("ACL_EMULATOR_DEVICE_COUNT", 2));
    s.capacity = env_number("ACL_EMULATOR_MEMORY_MB", 16384) << 20;
    const char* soc = std::getenv("ACL_EMULATOR_SOC_NAME");
    s.soc_name = soc != nullptr ? soc : "Ascend910B-emulator";
    s.devices.reset(new Device[std::max(s.device_count, 1)]);
    parse_faults(s);
  }
  s.initialized = true;
  return ACL_SUCCESS;
}

aclError aclFinalize() {
  State& s = state();
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.initialized) {
    return fail(ACL_ERROR_UNINITIALIZE,
                "aclFinalize: aclInit has not been called");
  }
  s.initialized = false;
  return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  if (!initialized()) {
    return fail(ACL_ERROR_UNINITIALIZE,
                "aclrtGetDeviceCount: aclInit has not been called");
  }
  *count = static_cast<uint32_t>(state().device_count);
  return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId) {
  if (!initialized()) {
    return fail(ACL_ERROR_UNINITIALIZE,
                "aclrtSetDevice: aclInit has not been called");
  }
  State& s = state();
  if (deviceId < 0 || deviceId >= s.device_count) {
    return fail(
        ACL_ERROR_RT_INVALID_DEVICEID,
        "aclrtSetDevice: invalid device id " + std::to_string(deviceId));
  }
  Device& device = s.devices[deviceId];
  {
    const std::lock_guard<std::mutex> lock(device.mutex);
    if (device.default_stream == nullptr) {
      device.default_stream = new Stream(deviceId);
    }
  }
  current_device = deviceId;
  return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t* deviceId) {
  int device = 0;
  if (const aclError status = device_of_thread("aclrtGetDevice", &device)) {
    return status;
  }
  *deviceId = device;
  return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
  if (deviceId < 0 || deviceId >= state().device_count) {
    return fail(ACL_ERROR_RT_INVALID_DEVICEID,
                "aclrtResetDevice: invalid device id");
  }
  if (current_device == deviceId) {
    current_device = -1;
  }
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeDevice(void) {
  int index = 0;
  if (const aclError status =
          device_of_thread("aclrtSynchronizeDevice", &index)) {
    return status;
  }
  const std::vector<Stream*> streams = streams_of_device(index);
  for (Stream* stream : streams) {
    if (const aclError refused =
            refuse_if_capturing(stream, "aclrtSynchronizeDevice")) {
      return refused;
    }
  }
  aclError first = ACL_SUCCESS;
  for (Stream* stream : streams) {
    const aclError status = stream->synchronize();
    first = first != ACL_SUCCESS ? first : status;
  }
  return first;
}

const char* aclrtGetSocName() {
  return initialized() ? state().soc_name.c_str() : nullptr;
}

aclError aclrtCreateStreamWithConfig(aclrtStream* stream, uint32_t /*priority*/,
                                     uint32_t /*flag*/) {
  if (stream == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: null stream");
  }
  int index = 0;
  if (const aclError status = device_of_thread("aclrtCreateStream", &index)) {
    return status;
  }
  if (injected_fault("aclrtCreateStream")) {
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
  auto* created = new Stream(index);
  Device& device = state().devices[index];
  const std::lock_guard<std::mutex> lock(device.mutex);
  device.streams.insert(created);
  *stream = created;
  return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream* stream) {
  return aclrtCreateStreamWithConfig(stream, 0, 0);
}

aclError aclrtDestroyStream(aclrtStream stream) {
  auto* target = static_cast<Stream*>(stream);
  if (target == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: null stream");
  }
  target->synchronize();  // its remaining work finishes first, as in CANN
  Device& device = state().devices[target->device];
  const std::lock_guard<std::mutex> lock(device.mutex);
  device.streams.erase(target);
  // The worker thread keeps waiting on the (leaked) stream: never joined.
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  int index = 0;
  if (const aclError status =
          device_of_thread("aclrtSynchronizeStream", &index)) {
    return status;
  }
  if (injected_fault("aclrtSynchronizeStream")) {
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
  Stream* target = stream_of(stream, index);
  if (const aclError refused =
          refuse_if_capturing(target, "aclrtSynchronizeStream")) {
    return refused;
  }
  return target->synchronize();
}

aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus* status) {
  if (status == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtStreamQuery: null status");
  }
  int index = 0;
  if (const aclError error = device_of_thread("aclrtStreamQuery", &index)) {
    return error;
  }
  Stream* target = stream_of(stream, index);
  if (const aclError refused =
          refuse_if_capturing(target, "aclrtStreamQuery")) {
    return refused;
  }
  {
    const std::lock_guard<std::mutex> lock(target->mutex);
    *status = target->finished == target->enqueued
                  ? ACL_STREAM_STATUS_COMPLETE
                  : ACL_STREAM_STATUS_NOT_READY;
  }
  return *status == ACL_STREAM_STATUS_COMPLETE ? target->take_error()
                                               : ACL_SUCCESS;
}

aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void* args) {
  if (fn == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtLaunchHostFunc: null function");
  }
  return enqueue(
      stream,
      [fn, args] {
        fn(args);
        return ACL_SUCCESS;
      },
      "aclrtLaunchHostFunc");
}

aclError aclrtCreateEventWithFlag(aclrtEvent* event, uint32_t flag) {
  if (!initialized()) {
    return fail(ACL_ERROR_UNINITIALIZE,
                "aclrtCreateEventWithFlag: aclInit has not been called");
  }
  if (event == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtCreateEventWithFlag: null event");
  }
  if (injected_fault("aclrtCreateEventWithFlag")) {
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
  auto* created = new Event();
  created->timing = (flag & ACL_EVENT_TIME_LINE) != 0;
  *event = created;
  return ACL_SUCCESS;
}

aclError aclrtDestroyEvent(aclrtEvent event) {
  if (event == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyEvent: null event");
  }
  // Its pending recordings hold their markers; the event itself can go.
  delete static_cast<Event*>(event);
  return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  int index = 0;
  if (const aclError status = device_of_thread("aclrtRecordEvent", &index)) {
    return status;
  }
  if (event == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtRecordEvent: null event");
  }
  if (injected_fault("aclrtRecordEvent")) {
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
  auto* target = static_cast<Event*>(event);
  auto marker = std::make_shared<Marker>();
  marker->stream = stream_of(stream, index);
  {
    const std::lock_guard<std::mutex> lock(marker->stream->mutex);
    marker->captured_in = marker->stream->capture;
  }
  {
    const std::lock_guard<std::mutex> lock(target->mutex);
    target->last = marker;
  }
  // Captured, the marker is done at each launch of the model instead.
  marker->task = marker->stream->push([marker] {
    marker->when = Clock::now();
    marker->done.store(true);
    return ACL_SUCCESS;
  });
  return ACL_SUCCESS;
}

aclError aclrtQueryEventStatus(aclrtEvent event,
                               aclrtEventRecordedStatus* status) {
  if (event == nullptr || status == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtQueryEventStatus: null event or status");
  }
  const auto marker = static_cast<Event*>(event)->marker();
  if (marker != nullptr && open_capture(*marker)) {
    return fail(ACL_ERROR_RT_PARAM_INVALID,
                "aclrtQueryEventStatus: the event was recorded in a capture "
                "that has not ended");
  }
  *status = marker != nullptr && marker->done.load()
                ? ACL_EVENT_RECORDED_STATUS_COMPLETE
                : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
  if (event == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeEvent: null event");
  }
  if (injected_fault("aclrtSynchronizeEvent")) {
    return ACL_ERROR_RT_INTERNAL_ERROR;
  }
  const auto marker = static_cast<Event*>(event)->marker();
  if (marker != nullptr && open_capture(*marker)) {
    return fail(ACL_ERROR_RT_PARAM_INVALID,
                "aclrtSynchronizeEvent: the event was recorded in a capture "
                "that has not ended");
  }
  if (marker != nullptr) {
    marker->stream->wait_for(marker->task);
  }
  return ACL_SUCCESS;
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  int index = 0;
  if (const aclError status =
          device_of_thread("aclrtStreamWaitEvent", &index)) {
    return status;
  }
  if (event == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtStreamWaitEvent: null event");
  }
  const auto marker = static_cast<Event*>(event)->marker();
  if (marker == nullptr) {
    return ACL_SUCCESS;
  }
  // An event recorded in an open capture: the waiting stream joins it, and
  // the capture's order already puts the record before what follows.
  if (join_capture(stream_of(stream, index), *marker)) {
    return ACL_SUCCESS;
  }
  stream_of(stream, index)->push([marker] {
    marker->stream->wait_for(marker->task);
    return ACL_SUCCESS;
  });
  return ACL_SUCCESS;
}

aclError aclrtEventElapsedTime(float* ms, aclrtEvent startEvent,
                               aclrtEvent endEvent) {
  auto* start = static_cast<Event*>(startEvent);
  auto* end = static_cast<Event*>(endEvent);
  if (ms == nullptr || start == nullptr || end == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM,
                "aclrtEventElapsedTime: null result or event");
  }
  if (!start->timing || !end->timing) {
    return fail(
        ACL_ERROR_INVALID_PARAM,
        "aclrtEventElapsedTime: events need the ACL_EVENT_TIME_LINE flag");
  }
  const auto first = start->marker();
  const auto last = end->marker();
  if (first == nullptr || last == nullptr || !first->done || !last->done) {
    return fail(
        ACL_ERROR_INVALID_PARAM,
        "aclrtEventElapsedTime: both events must be recorded and complete");
  }
  *ms = std::chrono::duration<float, std::milli>(last->when - first->when)
            .count();
  return ACL_SUCCESS;
}

}  // extern "C"
