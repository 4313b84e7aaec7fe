// Internal: running ops without a device kernel on the CPU.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/library.h>

#include "../DeviceCheck.h"

#include <optional>
#include <string>

#include <c10/util/SmallVector.h>

#include <utility>
#include <vector>

namespace torch_backend {

// TORCH_BACKEND_FALLBACK: allow (default), warn (once per op) or error.
enum class FallbackPolicy { Allow, Warn, Error };
FallbackPolicy fallback_policy();
// Applies the policy for `op` (warns or throws NotImplementedError).
void apply_fallback_policy(const c10::OperatorHandle& op);

// Throws naming `op` if the current stream is capturing a graph: the CPU
// fallback runs on the host at once, so a graph cannot hold it.
void refuse_fallback_while_capturing(const char* op);
void refuse_fallback_while_capturing(const c10::OperatorHandle& op);

// Zero-copy: device tensors are aliased as CPU tensors and fresh outputs are
// allocated in device memory. Needs host-addressable device memory.
void host_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);
// Copies arguments to the host and results back (any device).
void copy_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);
// The fallback this device uses (zero-copy where host code can address its
// memory): for device kernels that decline a call.
void run_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// While alive on this thread, CPU allocations come from `device`'s memory.
class RouteCpuAllocations {
 public:
  explicit RouteCpuAllocations(c10::DeviceIndex device);
  ~RouteCpuAllocations();

 private:
  c10::DeviceIndex previous_;
};
// Spans one fallback call: routed allocations a kernel keeps beyond the
// outermost call are handed from this thread's list to a global map.
class RoutedAllocationScope {
 public:
  RoutedAllocationScope();
  ~RoutedAllocationScope();
  RoutedAllocationScope(const RoutedAllocationScope&) = delete;
  RoutedAllocationScope& operator=(const RoutedAllocationScope&) = delete;
};
void install_cpu_allocation_routing();
// Whether a CPU DataPtr came from a routed (device) allocation, and taking
// it over from a CPU storage as a device DataPtr.
bool is_routed(const c10::DataPtr& data);
c10::DataPtr take_routed(const c10::Storage& storage, c10::Device device);
// CPU storages already moved to the device during one fallback call.
// (A handful at most: a linear search beats hashing.)
using AdoptedStorages =
    c10::SmallVector<std::pair<c10::StorageImpl*, c10::Storage>, 2>;
// Moves a CPU tensor's storage that was allocated under RouteCpuAllocations
// to the device, without copying; an undefined tensor if it was not.
at::Tensor adopt_routed_storage(const at::Tensor& cpu, c10::Device device,
                                AdoptedStorages& adopted);

// Calls `fn` on each tensor of an argument (a tensor, a tensor list or a
// list of optional tensors).
template <typename Fn>
void for_each_tensor(const c10::IValue& value, Fn&& fn) {
  if (value.isTensor()) {
    fn(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& t : value.toTensorVector()) {
      fn(t);
    }
  } else if (value.isList()) {
    for (const c10::IValue& item : value.toListRef()) {
      if (item.isTensor()) {
        fn(item.toTensor());
      }
    }
  }
}

// The device a boxed call runs on: its device tensors' one device (CUDA's
// rule, checked: a clear error for tensors of two devices), else its device
// argument, else the current device.
c10::Device op_device(const c10::OperatorHandle& op,
                      const torch::jit::Stack& stack);

// A CPU kernel's result as a device tensor: a view of an aliased input, an
// adopted routed allocation, or (a kernel returning other CPU memory) a copy.
at::Tensor result_to_device(const at::Tensor& cpu, c10::Device device,
                            AdoptedStorages& adopted);

// Unboxed zero-copy kernels for hot element-wise ops (no boxing on the way
// to the CPU kernel). Registers those the `eligible` ops it knows and
// returns their names ("add.Tensor").
std::vector<std::string> register_unboxed_fallbacks(
    torch::Library& aten, bool (*eligible)(const c10::OperatorHandle&));

}  // namespace torch_backend
