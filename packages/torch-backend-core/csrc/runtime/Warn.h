// Internal: warnings naming core's source file by its place in the package
// ("torch-backend-core/csrc/aten/fallback/Policy.cpp:48"), where TORCH_WARN
// names __FILE__, the build machine's absolute path, in every user's output.
#pragma once

#include <c10/util/Exception.h>
#include <c10/util/StringUtil.h>

#include <cstdint>

namespace torch_backend {

// The part of `path` from the folder that holds csrc/ on (all of it when
// there is no csrc/ in it).
constexpr const char* source_name(const char* path) {
  const char* csrc = nullptr;
  for (const char* p = path; *p != '\0'; ++p) {
    if (p[0] == '/' && p[1] == 'c' && p[2] == 's' && p[3] == 'r' &&
        p[4] == 'c' && p[5] == '/') {
      csrc = p;
    }
  }
  if (csrc == nullptr) {
    return path;
  }
  const char* start = csrc;
  while (start > path && start[-1] != '/') {
    --start;
  }
  return start;
}

}  // namespace torch_backend

#define TORCH_BACKEND_WARN(...)                                         \
  ::c10::warn(                                                          \
      ::c10::Warning(::c10::UserWarning(),                              \
                     {__func__, ::torch_backend::source_name(__FILE__), \
                      static_cast<uint32_t>(__LINE__)},                 \
                     ::c10::str(__VA_ARGS__), false))

// Once per process (per call site), like TORCH_WARN_ONCE; every time under
// torch.set_warn_always(True), as it does.
#define TORCH_BACKEND_WARN_ONCE(...)                                         \
  if (::c10::WarningUtils::get_warnAlways()) {                               \
    TORCH_BACKEND_WARN(__VA_ARGS__);                                         \
  } else {                                                                   \
    [[maybe_unused]] static const bool C10_ANONYMOUS_VARIABLE(warned_once) = \
        [&] {                                                                \
          TORCH_BACKEND_WARN(__VA_ARGS__);                                   \
          return true;                                                       \
        }();                                                                 \
  }
