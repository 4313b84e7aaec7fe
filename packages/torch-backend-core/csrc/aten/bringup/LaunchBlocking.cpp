#include "LaunchBlocking.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>

#include <torch_backend/Runtime.h>

#include "../../runtime/Streams.h"

namespace torch_backend {

bool launch_blocking() {
  static const bool enabled = [] {
    const char* value = std::getenv("TORCH_BACKEND_LAUNCH_BLOCKING");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return enabled;
}

void wait_after_launch(const char* what, c10::Device device) {
  const StreamHandle stream = native_stream(current_stream(device.index()));
  DeviceRuntime& runtime = active_runtime();
  const Status status = runtime.stream_synchronize(stream);
  TORCH_CHECK(
      status == kSuccess, what, " failed on ", device, ": ",
      runtime.error_text(status),
      " (raised by the op that ran it: TORCH_BACKEND_LAUNCH_BLOCKING=1)");
}

}  // namespace torch_backend
