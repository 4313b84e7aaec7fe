// Scratch memory for device kernels (allocate_workspace in DeviceKernels.h):
// ordinary blocks of the caching allocator, held by pointer between the two
// calls because the kernel interface is torch-free.
#include <mutex>
#include <unordered_map>

#include <c10/util/Exception.h>

#include <torch_backend/Allocator.h>
#include <torch_backend/DeviceKernels.h>
#include <torch_backend/Runtime.h>

#include "../../runtime/Warn.h"

namespace torch_backend {

namespace {

std::mutex& held_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Leaked: workspaces may be released during interpreter shutdown.
std::unordered_map<void*, c10::DataPtr>& held() {
  static auto* map = new std::unordered_map<void*, c10::DataPtr>();
  return *map;
}

}  // namespace

void* allocate_workspace(const KernelContext& ctx, std::size_t bytes) {
  if (bytes == 0) {
    return nullptr;
  }
  // The caching allocator serves the calling thread's current device and
  // stream, which are ctx's inside a kernel.
  TORCH_CHECK(ctx.device == current_device(),
              "allocate_workspace: called for device ", ctx.device,
              " while device ", current_device(),
              " is current (call it from inside the kernel)");
  c10::DataPtr data = device_allocator()->allocate(bytes);
  void* ptr = data.get();
  const std::lock_guard<std::mutex> lock(held_mutex());
  held().emplace(ptr, std::move(data));
  return ptr;
}

void release_workspace(void* ptr) {
  if (ptr == nullptr) {
    return;
  }
  c10::DataPtr data;
  {
    const std::lock_guard<std::mutex> lock(held_mutex());
    auto it = held().find(ptr);
    if (it == held().end()) {
      // Called from destructors (KernelWorkspace): report, never throw.
      TORCH_BACKEND_WARN(
          "release_workspace: ignored a pointer that allocate_workspace did "
          "not return (or that was released already)");
      return;
    }
    data = std::move(it->second);
    held().erase(it);
  }
  // `data` frees here, outside the lock, into the allocator's cache.
}

}  // namespace torch_backend
