#include "Capture.h"

#include <array>
#include <atomic>
#include <mutex>
#include <optional>

#include <c10/core/DeviceType.h>
#include <c10/util/Exception.h>

#include <torch_backend/Runtime.h>

#include "Streams.h"

namespace torch_backend {
namespace {

struct CaptureRecord {
  c10::Stream stream;
  std::string failure;  // why a refused call invalidated it; empty: fine
};

std::mutex captures_mutex;
std::array<std::optional<CaptureRecord>, kMaxDevices> captures;  // per device
std::atomic<int> in_progress{0};

std::string device_name() { return c10::get_privateuse1_backend(); }

[[noreturn]] void refuse(CaptureRecord& record, const std::string& what,
                         const std::string& advice) {
  const std::string reason =
      what + ", which cannot be captured into a graph: " +
      record.stream.device().str() + " stream " +
      std::to_string(record.stream.id()) + " is capturing (" + advice + ")";
  if (record.failure.empty()) {
    record.failure = reason;
  }
  TORCH_CHECK(false, reason,
              ". The capture is invalidated: ending it raises this error.");
}

}  // namespace

void begin_capture(const c10::Stream& stream, CaptureMode mode) {
  const c10::DeviceIndex device = stream.device_index();
  TORCH_CHECK(device >= 0 && device < kMaxDevices, "invalid device ", device);
  std::lock_guard<std::mutex> lock(captures_mutex);
  TORCH_CHECK(!captures[device].has_value(), "a graph is already being ",
              "captured on ", stream.device(), " (stream ",
              captures[device] ? captures[device]->stream.id() : 0,
              "): end that capture before beginning another");
  const Status status =
      active_runtime().capture_begin(native_stream(stream), mode);
  TORCH_CHECK_NOT_IMPLEMENTED(
      status != kNotSupported, "the ", device_name(),
      " runtime cannot capture graphs (DeviceRuntime::capture_begin and the "
      "other graph symbols are not implemented by its device library)");
  check_status(status, "capture_begin");
  captures[device] = CaptureRecord{stream, {}};
  in_progress.fetch_add(1, std::memory_order_release);
}

GraphHandle end_capture(const c10::Stream& stream) {
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(captures_mutex);
    std::optional<CaptureRecord>& record = captures[stream.device_index()];
    TORCH_CHECK(record.has_value() && record->stream == stream,
                "no graph capture began on ", stream.device(), " stream ",
                stream.id());
    failure = record->failure;
    record.reset();
    in_progress.fetch_sub(1, std::memory_order_release);
  }
  DeviceRuntime& runtime = active_runtime();
  GraphHandle graph = nullptr;
  const Status status = runtime.capture_end(native_stream(stream), &graph);
  if (!failure.empty()) {
    if (status == kSuccess && graph != nullptr) {
      (void)runtime.graph_destroy(graph);
    }
    TORCH_CHECK(false, "the graph capture on ", stream.device(),
                " failed: ", failure);
  }
  check_status(status, "capture_end");
  return graph;
}

bool any_capture_in_progress() {
  return in_progress.load(std::memory_order_acquire) > 0;
}

bool is_capturing(const c10::Stream& stream) {
  if (!any_capture_in_progress()) {
    return false;
  }
  bool capturing = false;
  check_status(
      active_runtime().stream_is_capturing(native_stream(stream), &capturing),
      "stream_is_capturing");
  return capturing;
}

void refuse_while_capturing(const c10::Stream& stream, const std::string& what,
                            const std::string& advice) {
  if (!is_capturing(stream)) {
    return;
  }
  std::lock_guard<std::mutex> lock(captures_mutex);
  std::optional<CaptureRecord>& record = captures[stream.device_index()];
  if (record.has_value()) {
    refuse(*record, what, advice);
  }
}

void refuse_while_device_captures(c10::DeviceIndex device,
                                  const std::string& what,
                                  const std::string& advice) {
  if (!any_capture_in_progress() || device < 0 || device >= kMaxDevices) {
    return;
  }
  std::lock_guard<std::mutex> lock(captures_mutex);
  std::optional<CaptureRecord>& record = captures[device];
  if (record.has_value()) {
    refuse(*record, what, advice);
  }
}

}  // namespace torch_backend
