// Fresh outputs of CPU kernels run by the zero-copy fallback land directly in
// device memory: a wrapper around PyTorch's CPU allocator, registered with
// c10::SetAllocator, serves CPU allocations from the device allocator while a
// thread-local flag is set, and delegates to the original otherwise. The
// results are then relabelled as device storages without a copy.
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/TensorImpl.h>

#include <torch_backend/Allocator.h>
#include <torch_backend/HostAccess.h>

#include <mutex>
#include <unordered_map>

#include "Fallback.h"

namespace torch_backend {
namespace {

thread_local c10::DeviceIndex t_route_to = -1;

// Routed allocations, by address. CPU code may use raw_allocate, which needs
// a DataPtr whose context is its data pointer, so the device DataPtr (whose
// context is the allocator's block) is kept here until freed or adopted.
std::mutex g_routed_mutex;
std::unordered_map<void*, c10::DataPtr>& routed() {
  static auto* map = new std::unordered_map<void*, c10::DataPtr>();
  return *map;
}

c10::DeleterFnPtr g_original_raw_deleter = nullptr;

void release_routed(void* ptr) {
  c10::DataPtr owned;
  {
    std::lock_guard<std::mutex> lock(g_routed_mutex);
    auto it = routed().find(ptr);
    if (it == routed().end()) {
      return;
    }
    owned = std::move(it->second);
    routed().erase(it);
  }
}  // `owned` frees the device block here, outside the lock

// raw_deallocate() may get either kind of pointer: look it up first.
void release_raw(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(g_routed_mutex);
    if (routed().find(ptr) == routed().end()) {
      if (g_original_raw_deleter != nullptr) {
        g_original_raw_deleter(ptr);
      }
      return;
    }
  }
  release_routed(ptr);
}

class RoutingCpuAllocator final : public c10::Allocator {
 public:
  explicit RoutingCpuAllocator(c10::Allocator* original) : original_(original) {
    g_original_raw_deleter = original->raw_deleter();
  }

  c10::DataPtr allocate(size_t bytes) override {
    if (t_route_to < 0) {
      return original_->allocate(bytes);
    }
    c10::DeviceGuard guard({c10::DeviceType::PrivateUse1, t_route_to});
    c10::DataPtr data = device_allocator()->allocate(bytes);
    void* ptr = data.get();
    if (ptr == nullptr) {
      return {nullptr, c10::Device(c10::DeviceType::CPU)};
    }
    {
      std::lock_guard<std::mutex> lock(g_routed_mutex);
      routed().emplace(ptr, std::move(data));
    }
    return {ptr, ptr, &release_routed, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return g_original_raw_deleter == nullptr ? nullptr : &release_raw;
  }

  void copy_data(void* dest, const void* src, size_t count) const override {
    default_copy_data(dest, src, count);
  }

 private:
  c10::Allocator* original_;
};

}  // namespace

RouteCpuAllocations::RouteCpuAllocations(c10::DeviceIndex device)
    : previous_(t_route_to) {
  t_route_to = device;
}

RouteCpuAllocations::~RouteCpuAllocations() { t_route_to = previous_; }

void install_cpu_allocation_routing() {
  static auto* routing = new RoutingCpuAllocator(c10::GetCPUAllocator());
  // Priority above the default CPU allocator's, so it stays in place.
  c10::SetAllocator(c10::DeviceType::CPU, routing, /*priority=*/1);
}

bool is_routed(const c10::DataPtr& data) {
  return data.get_deleter() == &release_routed;
}

c10::DataPtr take_routed(const c10::Storage& storage, c10::Device device) {
  c10::DataPtr cpu_side = storage.set_data_ptr(c10::DataPtr());
  void* ptr = cpu_side.get();
  cpu_side.release_context();  // ownership moves to the device DataPtr
  c10::DataPtr owned;
  {
    std::lock_guard<std::mutex> lock(g_routed_mutex);
    auto it = routed().find(ptr);
    TORCH_INTERNAL_ASSERT(it != routed().end(), "unknown routed allocation");
    owned = std::move(it->second);
    routed().erase(it);
  }
  owned.unsafe_set_device(device);
  return owned;
}

at::Tensor adopt_routed_storage(const at::Tensor& cpu, c10::Device device,
                                AdoptedStorages& adopted) {
  if (!cpu.defined() || !cpu.has_storage()) {
    return {};
  }
  const c10::Storage& source = cpu.storage();
  auto found = adopted.find(source.unsafeGetStorageImpl());
  if (found == adopted.end()) {
    if (!is_routed(source.data_ptr())) {
      return {};
    }
    c10::DataPtr data = take_routed(source, device);
    // Outputs sharing a CPU storage share one device storage.
    found = adopted
                .emplace(source.unsafeGetStorageImpl(),
                         c10::Storage(c10::Storage::use_byte_size_t(),
                                      source.nbytes(), std::move(data),
                                      device_allocator(), /*resizable=*/true))
                .first;
  }
  return device_tensor_like(found->second, cpu);
}

}  // namespace torch_backend
