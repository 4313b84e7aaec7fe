#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_set>

#include <c10/core/DeviceType.h>
#include <c10/util/Exception.h>

#include "../../runtime/Capture.h"
#include "../../runtime/Streams.h"
#include "../../runtime/Warn.h"
#include "Fallback.h"

namespace torch_backend {

FallbackPolicy fallback_policy() {
  static const FallbackPolicy policy = [] {
    const char* text = std::getenv("TORCH_BACKEND_FALLBACK");
    const std::string value = text == nullptr ? "" : text;
    if (value.empty() || value == "allow") {
      return FallbackPolicy::Allow;
    }
    if (value == "warn") {
      return FallbackPolicy::Warn;
    }
    if (value == "error") {
      return FallbackPolicy::Error;
    }
    TORCH_BACKEND_WARN("TORCH_BACKEND_FALLBACK='", value,
                       "' is not one of allow, warn, error; using allow");
    return FallbackPolicy::Allow;
  }();
  return policy;
}

void refuse_fallback_while_capturing(const char* op) {
  if (!any_capture_in_progress()) {
    return;
  }
  refuse_while_capturing(
      current_stream(current_device_index()),
      std::string("'") + op + "' runs on the CPU fallback",
      "no device kernel takes it: give the op a kernel, or keep it outside "
      "the captured region");
}

void refuse_fallback_while_capturing(const c10::OperatorHandle& op) {
  if (any_capture_in_progress()) {
    refuse_fallback_while_capturing(c10::toString(op.operator_name()).c_str());
  }
}

void apply_fallback_policy(const c10::OperatorHandle& op) {
  const FallbackPolicy policy = fallback_policy();
  if (policy == FallbackPolicy::Allow) {
    return;
  }
  const std::string name = c10::toString(op.operator_name());
  const std::string device = c10::get_privateuse1_backend();
  TORCH_CHECK_NOT_IMPLEMENTED(
      policy != FallbackPolicy::Error, "The operator '", name,
      "' has no native kernel for the ", device,
      " device (TORCH_BACKEND_FALLBACK=error forbids running it on the CPU)");
  static std::mutex mutex;
  static std::unordered_set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(name).second) {
    TORCH_BACKEND_WARN("The operator '", name,
                       "' has no native kernel for the ", device,
                       " device and runs on the CPU fallback "
                       "(TORCH_BACKEND_FALLBACK=warn)");
  }
}

}  // namespace torch_backend
