// Internal: what every kernel family's ATen wrapper shares: turning ATen
// tensors and iterators into the backend's descriptors, the context a kernel
// runs in, and the fallback for calls a kernel declines.
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <torch_backend/DeviceKernels.h>
#include <torch_backend/Runtime.h>

#include "../../runtime/DeviceActivity.h"
#include "../DeviceCheck.h"
#include "../bringup/ForcedFallback.h"
#include "../bringup/LaunchBlocking.h"
#include "../bringup/OpReport.h"
#include "DTypes.h"

namespace torch_backend {

// A tensor's own sizes and strides (not coalesced).
TensorView view_of(const at::Tensor& tensor);

// A 0-dim tensor as one element (softmax and indexing take a scalar as a
// vector of one).
inline at::Tensor at_least_1d(const at::Tensor& tensor) {
  return tensor.dim() == 0 ? tensor.unsqueeze(0) : tensor;
}

// The tensors a kernel call's views point into, kept alive until the kernel
// has been enqueued. A temporary (x.contiguous() of a strided x) would
// otherwise go back to the caching allocator before the launch, and a
// workspace the kernel allocates could be handed its memory while the kernel
// reads it. Declare one before the call's views and keep it to the launch.
class KeptTensors {
 public:
  TensorView view(at::Tensor tensor) {
    kept_.push_back(std::move(tensor));
    return view_of(kept_.back());
  }
  // An undefined tensor (an absent optional operand) gives an empty view.
  TensorView view_or_absent(at::Tensor tensor) {
    return tensor.defined() ? view(std::move(tensor)) : TensorView{};
  }

 private:
  std::vector<at::Tensor> kept_;
};
// Operand `arg` of a built iterator, over its coalesced shape.
TensorView view_of(const at::TensorIteratorBase& iter, int arg);

// A scalar argument in `compute`'s C++ type, with PyTorch's overflow check
// ("value cannot be converted to type int8_t without overflow").
ScalarValue scalar_value(const c10::Scalar& scalar, at::ScalarType compute);

// A Python number operand (`x * 2`, `_foreach_mul_(xs, 2)`) in `compute`'s
// C++ type as a cast gives it, without the overflow check of scalar_value:
// the CPU converts such operands that way.
ScalarValue cast_scalar(const c10::Scalar& scalar, at::ScalarType compute);

// The same for an operand of arithmetic (`half_x * 0.1`, `_foreach_add_`),
// in compute's math type: float for float16 and bfloat16 (at::opmath_type),
// as CPU and CUDA kernels read it, so the result is rounded once. Comparisons
// and where() take theirs in the compute dtype (cast_scalar), as they do.
ScalarValue opmath_scalar(const c10::Scalar& scalar, at::ScalarType compute);

// Makes input `k` of `call` a host scalar operand of `value`
// (DeviceKernels.h): out's sizes, strides 0, no data.
void set_scalar_input(ElementwiseCall& call, int k, DType dtype,
                      const ScalarValue& value);

// The current stream of `device`, which the kernel enqueues on.
KernelContext kernel_context(const c10::Device& device);

// Checks a kernel's status: true when it ran, false when it declined the
// call (kNotSupported); throws on any other error.
bool kernel_ran(Status status);

// Runs the boxed fallback for `op` on `stack`: for calls a kernel declines.
void fall_back(const c10::OperatorHandle& op, torch::jit::Stack& stack);

c10::OperatorHandle find_op(const char* qualified);  // "add.Tensor"
// The same for an op table's optional overload (nullptr: none).
std::optional<c10::OperatorHandle> find_optional_op(const char* qualified);

// A device kernel behind CUDA's one-device rule: `fake:0 @ fake:1`, or a
// CPU tensor beside device ones, is a clear error before the kernel sees a
// pointer of another device (or of host memory) it cannot read.
template <class FuncType, FuncType* Kernel, bool CpuIndices>
struct DeviceChecked;
template <class Ret, class... Args, Ret (*Kernel)(Args...), bool CpuIndices>
struct DeviceChecked<Ret(Args...), Kernel, CpuIndices> {
  // The op's name for profilers, set at registration.
  static inline const char* op_name = "";

  static Ret call(Args... args) {
    if (C10_UNLIKELY(op_report_open())) {
      DeviceKernelCount count(op_name);
      return checked(std::forward<Args>(args)...);
    }
    return checked(std::forward<Args>(args)...);
  }

 private:
  static Ret checked(Args... args) {
    DeviceCheck check(CpuIndices);
    (check.see_argument(args), ...);
    const std::optional<c10::Device> device = check.device();
    if (C10_UNLIKELY(collecting_device_activity())) {
      DeviceActivityScope activity(op_name, device.value_or(current()));
      if (C10_UNLIKELY(launch_blocking())) {
        return call_blocking(device.value_or(current()),
                             std::forward<Args>(args)...);
      }
      return Kernel(std::forward<Args>(args)...);
    }
    if (C10_UNLIKELY(launch_blocking())) {
      return call_blocking(device.value_or(current()),
                           std::forward<Args>(args)...);
    }
    return Kernel(std::forward<Args>(args)...);
  }

  static c10::Device current() {
    return c10::Device(c10::DeviceType::PrivateUse1,
                       static_cast<c10::DeviceIndex>(current_device()));
  }

  // The kernel, then a wait for its stream, so that its failure is this op's.
  static Ret call_blocking(c10::Device device, Args... args) {
    if constexpr (std::is_void_v<Ret>) {
      Kernel(std::forward<Args>(args)...);
      wait_after_launch(op_name, device);
    } else {
      Ret result = Kernel(std::forward<Args>(args)...);
      wait_after_launch(op_name, device);
      return result;
    }
  }
};

// Registers a device kernel for the overload `qualified`, device-checked,
// unless TORCH_BACKEND_FORCE_FALLBACK keeps that overload on the fallback.
template <class FuncType, FuncType* Kernel>
void register_kernel(torch::Library& aten, const char* qualified,
                     c10::CompileTimeFunctionPointer<FuncType, Kernel>) {
  if (forced_to_fallback(qualified)) {
    return;
  }
  if (takes_cpu_indices(qualified)) {
    DeviceChecked<FuncType, Kernel, true>::op_name = qualified;
    aten.impl(qualified,
              TORCH_FN((DeviceChecked<FuncType, Kernel, true>::call)));
  } else {
    DeviceChecked<FuncType, Kernel, false>::op_name = qualified;
    aten.impl(qualified,
              TORCH_FN((DeviceChecked<FuncType, Kernel, false>::call)));
  }
}

// Registers `fn` for the overload `qualified` unless it is nullptr (a row
// without that overload), recording it in `registered`.
template <class Fn>
void impl_if_listed(torch::Library& aten, std::vector<std::string>& registered,
                    const char* qualified, Fn fn) {
  if (qualified != nullptr) {
    register_kernel(aten, qualified, fn);
    registered.emplace_back(qualified);
  }
}

// The first entry of `index` outside [0, size) other than `ignore`, if any:
// one synchronising check on the device, for the errors the CPU raises
// (none while the stream is captured: the kernel checks then).
std::optional<int64_t> first_out_of_range(const at::Tensor& index, int64_t size,
                                          std::optional<int64_t> ignore);

// Arguments as the boxed fallback takes them.
template <class T>
c10::IValue boxed(const T& value) {
  return c10::IValue(value);
}
inline c10::IValue boxed(c10::string_view value) { return std::string(value); }
inline c10::IValue boxed(at::IntArrayRef value) { return value.vec(); }
inline c10::IValue boxed(at::OptionalIntArrayRef value) {
  return value ? c10::IValue(value->vec()) : c10::IValue();
}

// Whether kernels take every tensor's dtype (else the call falls back).
template <class... Tensors>
bool kernel_dtypes(const Tensors&... tensors) {
  return (kernel_dtype(tensors.scalar_type()).has_value() && ...);
}

}  // namespace torch_backend
