// How many GPUs this process may use, counted without initialising CUDA.
//
// Core asks for the device count at `import torch` (a backend without
// devices is never activated). cudaGetDeviceCount runs the driver's cuInit,
// after which a forked child's CUDA calls fail (cudaErrorInitializationError):
// PyTorch's torch.cuda.device_count counts with NVML instead, narrowed by
// CUDA_VISIBLE_DEVICES as CUDA reads it, and so does this file.
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "CudaBackend.h"

namespace gpu {
namespace {

// The leading ordinal of one CUDA_VISIBLE_DEVICES entry ("1", " 2 "), or -1
// when it starts with anything else (CUDA ends the list there).
long leading_ordinal(const std::string& entry) {
  std::size_t at = 0;
  while (at < entry.size() &&
         std::isspace(static_cast<unsigned char>(entry[at]))) {
    ++at;
  }
  const std::size_t digits = at;
  while (at < entry.size() &&
         std::isdigit(static_cast<unsigned char>(entry[at]))) {
    ++at;
  }
  return at == digits ? -1 : std::strtol(entry.c_str() + digits, nullptr, 10);
}

}  // namespace

int visible_device_count(const char* visible, unsigned physical) {
  if (visible == nullptr) {
    return static_cast<int>(physical);
  }
  const std::string list(visible);
  if (list.rfind("GPU-", 0) == 0 || list.rfind("MIG-", 0) == 0) {
    return -1;  // UUIDs: only CUDA itself resolves them
  }
  std::vector<long> seen;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const long ordinal = leading_ordinal(list.substr(start, comma - start));
    for (long earlier : seen) {
      if (earlier == ordinal) {
        return 0;  // a repeated ordinal hides every device, as in CUDA
      }
    }
    if (ordinal < 0 || ordinal >= static_cast<long>(physical)) {
      break;  // the list ends at the first entry naming no device
    }
    seen.push_back(ordinal);
    start = comma + 1;
  }
  return static_cast<int>(seen.size());
}

int count_devices_without_cuda() {
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (nvml == nullptr) {
    return -1;
  }
  using Call = int (*)();
  using Count = int (*)(unsigned*);
  const auto init = reinterpret_cast<Call>(dlsym(nvml, "nvmlInit_v2"));
  const auto count =
      reinterpret_cast<Count>(dlsym(nvml, "nvmlDeviceGetCount_v2"));
  const auto shutdown = reinterpret_cast<Call>(dlsym(nvml, "nvmlShutdown"));
  int result = -1;
  if (init != nullptr && count != nullptr && shutdown != nullptr &&
      init() == 0) {
    unsigned physical = 0;
    if (count(&physical) == 0) {
      result =
          visible_device_count(std::getenv("CUDA_VISIBLE_DEVICES"), physical);
    }
    shutdown();
  }
  dlclose(nvml);
  return result;
}

}  // namespace gpu
