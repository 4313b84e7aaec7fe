// Internal: running ops without a device kernel on the CPU.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/library.h>

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

inline bool on_device(const at::Tensor& t) {
  return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1;
}

// CUDA's rule: one device per op, except CPU scalars (and CPU indices for
// indexing ops, which CUDA kernels accept too). `op` null: no such exception.
class DeviceCheck {
 public:
  explicit DeviceCheck(const c10::OperatorHandle* op) : op_(op) {}

  void see(const at::Tensor& t) {
    if (!t.defined()) {
      return;
    }
    if (on_device(t)) {
      if (!device_) {
        device_ = t.device();
      } else if (*device_ != t.device()) {
        fail(*device_, t.device());
      }
    } else if (t.is_cpu() && t.dim() > 0 && !allows_cpu_tensors()) {
      cpu_seen_ = true;
    }
  }

  std::optional<c10::Device> device() const {
    if (device_ && cpu_seen_) {
      fail(*device_, c10::Device(c10::DeviceType::CPU));
    }
    return device_;
  }

 private:
  [[noreturn]] static void fail(c10::Device a, c10::Device b) {
    TORCH_CHECK(false,
                "Expected all tensors to be on the same device, but found at "
                "least two devices, ",
                a, " and ", b, "!");
  }

  bool allows_cpu_tensors() const {  // asked only when a CPU tensor shows up
    return op_ != nullptr &&
           op_->schema().name().find("index") != std::string::npos;
  }

  const c10::OperatorHandle* op_;
  bool cpu_seen_ = false;
  std::optional<c10::Device> device_;
};

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
