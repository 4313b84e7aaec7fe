#include "ForcedFallback.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <optional>
#include <regex>
#include <string>

namespace torch_backend {
namespace {

constexpr const char* kSetting = "TORCH_BACKEND_FORCE_FALLBACK";

std::optional<std::regex> read_setting() {
  const char* value = std::getenv(kSetting);
  if (value == nullptr || *value == '\0') {
    return std::nullopt;
  }
  try {
    return std::regex(value, std::regex::ECMAScript);
  } catch (const std::regex_error& error) {
    TORCH_CHECK_VALUE(false, kSetting, "='", value,
                      "' is not a valid regular expression: ", error.what());
  }
}

}  // namespace

bool forced_to_fallback(const char* qualified) {
  static const std::optional<std::regex> pattern = read_setting();
  return pattern.has_value() && std::regex_search(qualified, *pattern);
}

}  // namespace torch_backend
