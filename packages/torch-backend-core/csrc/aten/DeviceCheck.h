// Internal: CUDA's one-device rule for an op's tensors. PyTorch's generated
// in-tree registrations check it before a CUDA kernel runs; ours are
// registered by hand (device kernels) or boxed (the fallbacks), so core
// checks it itself, or tensors of two devices would reach one kernel.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>

#include <optional>
#include <string_view>
#include <type_traits>

namespace torch_backend {

inline bool on_device(const at::Tensor& t) {
  return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1;
}

// Indexing ops (index_select, index_put_, ...) also take CPU index tensors,
// as their CUDA kernels do.
inline bool takes_cpu_indices(std::string_view op_name) {
  return op_name.find("index") != std::string_view::npos;
}

// One device per op, except CPU scalars (and CPU indices for indexing ops).
class DeviceCheck {
 public:
  // `op` null: no op takes CPU indices. Its name is read only when a CPU
  // tensor shows up (the common call pays nothing for it).
  explicit DeviceCheck(const c10::OperatorHandle* op) : op_(op) {}
  explicit DeviceCheck(bool cpu_indices_allowed)
      : op_(nullptr), cpu_indices_allowed_(cpu_indices_allowed) {}

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
    } else if (t.is_cpu() && t.dim() > 0 && !allows_cpu_indices()) {
      cpu_seen_ = true;
    }
  }

  // Any argument of a kernel's signature: tensors, optional tensors and
  // tensor lists are checked; everything else has no device.
  template <class T>
  void see_argument(const T& value) {
    using Type = std::decay_t<T>;
    if constexpr (std::is_same_v<Type, at::Tensor>) {
      see(value);
    } else if constexpr (std::is_same_v<Type, std::optional<at::Tensor>>) {
      if (value.has_value()) {
        see(*value);
      }
    } else if constexpr (std::is_same_v<Type, at::ITensorListRef> ||
                         std::is_same_v<Type, at::TensorList>) {
      for (const at::Tensor& t : value) {
        see(t);
      }
    }
  }

  // The one device; throws if device tensors met CPU tensors.
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

  bool allows_cpu_indices() const {
    return op_ != nullptr ? takes_cpu_indices(op_->schema().name())
                          : cpu_indices_allowed_;
  }

  const c10::OperatorHandle* op_;
  bool cpu_indices_allowed_ = false;
  bool cpu_seen_ = false;
  std::optional<c10::Device> device_;
};

}  // namespace torch_backend
