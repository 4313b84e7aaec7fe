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
#include <unordered_set>
#include <vector>

#include "Fallback.h"

namespace torch_backend {
namespace {

thread_local c10::DeviceIndex t_route_to = -1;

// Routed allocations not yet adopted. CPU code may use raw_allocate, which
// needs a DataPtr whose context is its data pointer, so the device DataPtr
// (whose context is the allocator's block) is kept aside until freed or
// adopted. Nearly all of them live and die within one fallback call on one
// thread: a thread-local list, no lock. Those a kernel keeps beyond the call
// move to a global map when the outermost call ends.
struct Routed {
  void* ptr;
  c10::DataPtr data;
};
thread_local std::vector<Routed> t_routed;
thread_local int t_fallback_depth = 0;

std::mutex g_routed_mutex;
std::unordered_map<void*, c10::DataPtr>& escaped() {
  static auto* map = new std::unordered_map<void*, c10::DataPtr>();
  return *map;
}
// Freed on another thread while still listed on the allocating one.
std::unordered_set<void*>& orphaned() {
  static auto* set = new std::unordered_set<void*>();
  return *set;
}

// The device DataPtr of routed allocation `ptr`; empty if `ptr` is not one.
c10::DataPtr take(void* ptr) {
  for (size_t i = t_routed.size(); i-- > 0;) {
    if (t_routed[i].ptr == ptr) {
      c10::DataPtr data = std::move(t_routed[i].data);
      t_routed[i] = std::move(t_routed.back());
      t_routed.pop_back();
      return data;
    }
  }
  std::lock_guard<std::mutex> lock(g_routed_mutex);
  auto it = escaped().find(ptr);
  if (it == escaped().end()) {
    return {};
  }
  c10::DataPtr data = std::move(it->second);
  escaped().erase(it);
  return data;
}

void release_routed(void* ptr) {
  c10::DataPtr owned = take(ptr);  // frees the device block on return
  if (!owned) {
    std::lock_guard<std::mutex> lock(g_routed_mutex);
    orphaned().insert(ptr);  // its owner thread frees it when its call ends
  }
}

c10::DeleterFnPtr g_original_raw_deleter = nullptr;

// raw_deallocate() may get either kind of pointer.
void release_raw(void* ptr) {
  if (c10::DataPtr owned = take(ptr)) {
    return;
  }
  if (g_original_raw_deleter != nullptr) {
    g_original_raw_deleter(ptr);
  }
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
    t_routed.push_back({ptr, std::move(data)});
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

RoutedAllocationScope::RoutedAllocationScope() { ++t_fallback_depth; }

RoutedAllocationScope::~RoutedAllocationScope() {
  if (--t_fallback_depth > 0 || t_routed.empty()) {
    return;
  }
  std::vector<c10::DataPtr> to_free;  // freed outside the lock
  {
    std::lock_guard<std::mutex> lock(g_routed_mutex);
    for (Routed& r : t_routed) {
      if (orphaned().erase(r.ptr) > 0) {
        to_free.push_back(std::move(r.data));
      } else {
        escaped().emplace(r.ptr, std::move(r.data));
      }
    }
  }
  t_routed.clear();
}

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
  c10::DataPtr owned = take(ptr);
  TORCH_INTERNAL_ASSERT(owned, "unknown routed allocation");
  owned.unsafe_set_device(device);
  return owned;
}

at::Tensor adopt_routed_storage(const at::Tensor& cpu, c10::Device device,
                                AdoptedStorages& adopted) {
  if (!cpu.defined() || !cpu.has_storage()) {
    return {};
  }
  const c10::Storage& source = cpu.storage();
  // Outputs sharing a CPU storage share one device storage.
  for (const auto& [cpu_impl, device_storage] : adopted) {
    if (cpu_impl == source.unsafeGetStorageImpl()) {
      return device_tensor_like(device_storage, cpu);
    }
  }
  if (!is_routed(source.data_ptr())) {
    return {};
  }
  const size_t nbytes = source.nbytes();
  c10::DataPtr data = take_routed(source, device);
  adopted.emplace_back(
      source.unsafeGetStorageImpl(),
      c10::Storage(c10::Storage::use_byte_size_t(), nbytes, std::move(data),
                   device_allocator(), /*resizable=*/true));
  return device_tensor_like(adopted.back().second, cpu);
}

}  // namespace torch_backend
