// What TORCH_BACKEND_DIST_ERROR_HANDLING=abort does when a collective fails:
// used by the watchdog and by a work's wait, which must not depend on each
// other for it.
#pragma once

#include <string>

namespace torch_backend::distributed {

// Prints what failed and ends the process with status 1.
[[noreturn]] void end_process(const std::string& failure);

}  // namespace torch_backend::distributed
