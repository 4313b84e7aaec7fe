#include "StreamUse.h"

#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <torch_backend/Runtime.h>

#include "../runtime/Streams.h"
#include "../runtime/Warn.h"

namespace torch_backend {

EventHandle record_stream_use(DeviceRuntime& runtime, const c10::Stream& stream,
                              std::vector<EventHandle>* spares) {
  c10::DeviceGuard guard(stream.device());
  EventHandle event = nullptr;
  Status status = kSuccess;
  const char* failed = "event_create";
  if (spares != nullptr && !spares->empty()) {
    event = spares->back();
    spares->pop_back();
  } else {
    status = runtime.event_create(&event, false);
  }
  if (status == kSuccess) {
    status = runtime.event_record(event, native_stream(stream));
    if (status == kSuccess) {
      return event;
    }
    failed = "event_record";
    if (spares != nullptr) {
      spares->push_back(event);
    } else {
      runtime.event_destroy(event);  // best effort: it was never recorded
    }
  }
  // Correct without an event, only slower: this thread waits for the stream.
  TORCH_BACKEND_WARN(c10::get_privateuse1_backend(),
                     " runtime error: ", runtime.error_text(status),
                     " (status ", status, " from ", failed,
                     ") while freeing memory used on ", stream,
                     "; waiting for that stream instead");
  check_status(runtime.stream_synchronize(native_stream(stream)),
               "stream_synchronize");
  return nullptr;
}

}  // namespace torch_backend
