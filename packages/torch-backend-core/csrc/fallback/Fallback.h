// Internal: running ops without a device kernel on the CPU.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <unordered_map>

namespace torch_backend {

// TORCH_BACKEND_FALLBACK: allow (default), warn (once per op) or error.
enum class FallbackPolicy { Allow, Warn, Error };
FallbackPolicy fallback_policy();
// Applies the policy for `op` (warns or throws NotImplementedError).
void apply_fallback_policy(const c10::OperatorHandle& op);

// Zero-copy: device tensors are aliased as CPU tensors and fresh outputs are
// allocated in device memory. Needs host-addressable device memory.
void host_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);
// Copies arguments to the host and results back (any device).
void copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// While alive on this thread, CPU allocations come from `device`'s memory.
class RouteCpuAllocations {
 public:
  explicit RouteCpuAllocations(c10::DeviceIndex device);
  ~RouteCpuAllocations();

 private:
  c10::DeviceIndex previous_;
};
void install_cpu_allocation_routing();
// Whether a CPU DataPtr came from a routed (device) allocation, and taking
// it over from a CPU storage as a device DataPtr.
bool is_routed(const c10::DataPtr& data);
c10::DataPtr take_routed(const c10::Storage& storage, c10::Device device);
// CPU storages already moved to the device during one fallback call.
using AdoptedStorages = std::unordered_map<c10::StorageImpl*, c10::Storage>;
// Moves a CPU tensor's storage that was allocated under RouteCpuAllocations
// to the device, without copying; an undefined tensor if it was not.
at::Tensor adopt_routed_storage(const at::Tensor& cpu, c10::Device device,
                                AdoptedStorages& adopted);

}  // namespace torch_backend
