#include <torch_backend/Allocator.h>

#include <c10/core/DeviceType.h>
#include <c10/util/Exception.h>

#include <torch_backend/Runtime.h>

namespace torch_backend {
namespace {

void free_device_memory(void* ptr) {
  // A deleter must not throw; a failing free is reported, never ignored
  // silently.
  const Status status = active_runtime().free(ptr);
  if (status != kSuccess) {
    TORCH_WARN("failed to free device memory at ", ptr, ": ",
               active_runtime().error_text(status));
  }
}

class DeviceMemoryAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) override {
    DeviceRuntime& runtime = active_runtime();
    int device = 0;
    TORCH_BACKEND_CHECK(runtime.get_device(&device));
    const c10::Device where(c10::DeviceType::PrivateUse1,
                            static_cast<c10::DeviceIndex>(device));
    if (bytes == 0) {
      return {nullptr, nullptr, &free_device_memory, where};
    }
    void* ptr = nullptr;
    const Status status = runtime.malloc(&ptr, bytes);
    if (status != kSuccess && runtime.is_out_of_memory(status)) {
      size_t free_bytes = 0;
      size_t total_bytes = 0;
      runtime.mem_get_info(&free_bytes, &total_bytes);
      TORCH_CHECK_WITH(
          OutOfMemoryError, false, where, " out of memory: tried to allocate ",
          bytes, " bytes; device has ", free_bytes, " free of ", total_bytes,
          " bytes (", runtime.error_text(status), ")");
    }
    TORCH_BACKEND_CHECK(status);
    return {ptr, ptr, &free_device_memory, where};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_device_memory; }

  void copy_data(void* dest, const void* src, size_t count) const override {
    TORCH_BACKEND_CHECK(
        active_runtime().memcpy(dest, src, count, CopyKind::DeviceToDevice));
  }
};

}  // namespace

c10::Allocator* device_allocator() {
  static DeviceMemoryAllocator allocator;
  return &allocator;
}

}  // namespace torch_backend
