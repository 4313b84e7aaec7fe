#include "EndProcess.h"

#include <cstdio>
#include <cstdlib>

namespace torch_backend::distributed {

void end_process(const std::string& failure) {
  std::fprintf(stderr,
               "torch-backend: %s. Ending the process "
               "(TORCH_BACKEND_DIST_ERROR_HANDLING=abort).\n",
               failure.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace torch_backend::distributed
